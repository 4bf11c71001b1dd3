// safetensors files (io/safetensors_writer.hpp, io/safetensors_file.hpp): what the writer writes
// reads back bit for bit, by byte range (only the bytes asked for, a tensor's runs too); and each
// malformed file a download or a converter can leave is refused with a DataError (exit 3) that says
// what is wrong, before any tensor is read.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/safetensors_file.hpp"
#include "io/safetensors_index.hpp"
#include "io/safetensors_writer.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ddptrain_safetensors_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A file of the 8-byte length, `header` and `data_bytes` zero bytes.
std::string raw_file(const std::string& name, const std::string& header, int64_t data_bytes,
                     uint64_t length_field = UINT64_MAX) {
  const std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const uint64_t length = length_field == UINT64_MAX ? header.size() : length_field;
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((length >> (8 * i)) & 0xff));
  out << header << std::string(static_cast<size_t>(data_bytes), '\0');
  return path;
}

// The DataError's message on opening `path`, or "" if it opened.
std::string refusal(const std::string& path) {
  try {
    SafetensorsFile file(path);
  } catch (const DataError& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "";
}

TEST(Safetensors, WrittenTensorsReadBackExactly) {
  torch::manual_seed(4);
  const torch::Tensor f32 = torch::randn({3, 5});
  const torch::Tensor bf16 = torch::randn({7}).to(torch::kBFloat16);
  const torch::Tensor f16 = torch::randn({2, 2}).to(torch::kHalf);
  const torch::Tensor i64 = torch::arange(6, torch::kLong).view({2, 3});
  const torch::Tensor empty = torch::empty({0, 4});
  const std::string path = temp_path("round_trip.safetensors");
  write_safetensors(path,
                    {{"h.0.w", f32}, {"b", bf16}, {"half", f16}, {"steps", i64}, {"none", empty}},
                    {{"format", "pt"}, {"note", "a \"quoted\" value"}});
  SafetensorsFile file(path);
  EXPECT_EQ(file.header().metadata.at("format"), "pt");
  EXPECT_EQ(file.header().metadata.at("note"), "a \"quoted\" value");
  ASSERT_EQ(file.header().entries.size(), 5u);
  EXPECT_TRUE(torch::equal(file.read(*file.find("h.0.w")), f32));
  EXPECT_TRUE(torch::equal(file.read(*file.find("b")), bf16.to(torch::kFloat)));  // widened exactly
  EXPECT_TRUE(torch::equal(file.read(*file.find("half")), f16.to(torch::kFloat)));
  EXPECT_TRUE(torch::equal(file.read(*file.find("steps")), i64));
  EXPECT_EQ(file.read(*file.find("none")).sizes(), empty.sizes());
  EXPECT_EQ(file.bytes_read(), 15 * 4 + 7 * 2 + 4 * 2 + 6 * 8);
  EXPECT_EQ(file.find("missing"), nullptr);
  std::remove(path.c_str());
}

TEST(Safetensors, ReadsOnlyTheBytesAskedFor) {
  const std::string path = temp_path("partial.safetensors");
  write_safetensors(path, {{"big", torch::zeros({1000})}, {"small", torch::ones({3})}}, {});
  SafetensorsFile file(path);
  EXPECT_TRUE(torch::equal(file.read(*file.find("small")), torch::ones({3})));
  EXPECT_EQ(file.bytes_read(), 12);
  std::remove(path.c_str());
}

// Runs of a tensor as float32: a rank's slice under ZeRO-3 (one range), a transposed weight's
// band (a run per stored row, transposed on the way in), widened from BF16 and F16.
TEST(Safetensors, RunsReadOnlyTheirElements) {
  torch::manual_seed(5);
  const torch::Tensor f32 = torch::randn({4, 6});
  const torch::Tensor bf16 = torch::randn({4, 6}).to(torch::kBFloat16);
  const torch::Tensor steps = torch::arange(6, torch::kLong);
  const std::string path = temp_path("runs.safetensors");
  write_safetensors(path, {{"f32", f32}, {"bf16", bf16}, {"steps", steps}}, {});
  SafetensorsFile file(path);
  const SafetensorsEntry& a = *file.find("f32");
  torch::Tensor out = torch::zeros({9});
  file.read_floats(a, 5, 9, 9, 1, out.data_ptr<float>(), 9, false);
  EXPECT_TRUE(torch::equal(out, f32.view(-1).narrow(0, 5, 9)));
  EXPECT_EQ(file.bytes_read(), 9 * 4);
  // Columns 2..4 of every row, transposed: the model's rows 2..4 of a Conv1D weight.
  out = torch::zeros({3, 4});
  file.read_floats(a, 2, 3, 6, 4, out.data_ptr<float>(), 4, true);
  EXPECT_TRUE(torch::equal(out, f32.narrow(1, 2, 3).t()));
  EXPECT_EQ(file.bytes_read(), 9 * 4 + 12 * 4);
  // As stored, into rows longer than the runs: the rest of each row untouched.
  out = torch::full({4, 3}, 7.0F);
  file.read_floats(a, 0, 2, 6, 4, out.data_ptr<float>(), 3, false);
  EXPECT_TRUE(torch::equal(out.narrow(1, 0, 2), f32.narrow(1, 0, 2)));
  EXPECT_TRUE(torch::equal(out.narrow(1, 2, 1), torch::full({4, 1}, 7.0F)));
  const SafetensorsEntry& b = *file.find("bf16");
  out = torch::zeros({2, 4});
  file.read_floats(b, 1, 2, 6, 4, out.data_ptr<float>(), 4, true);
  EXPECT_TRUE(torch::equal(out, bf16.narrow(1, 1, 2).t().to(torch::kFloat)));
  EXPECT_THROW(file.read_floats(a, 20, 5, 5, 1, out.data_ptr<float>(), 5, false), DataError);
  EXPECT_THROW(file.read_floats(a, 4, 3, 6, 4, out.data_ptr<float>(), 3, false), DataError);
  EXPECT_THROW(file.read_floats(*file.find("steps"), 0, 2, 2, 1, out.data_ptr<float>(), 2, false),
               DataError);  // not floating point
  std::remove(path.c_str());
}

// A weight larger than read_floats' buffer goes through it in several passes.
TEST(Safetensors, LargeTransposedReadsTakeSeveralPasses) {
  torch::manual_seed(6);
  const torch::Tensor f32 = torch::randn({300, 1000});
  const torch::Tensor f16 = torch::randn({300, 1000}).to(torch::kHalf);
  const std::string path = temp_path("large.safetensors");
  write_safetensors(path, {{"f32", f32}, {"f16", f16}}, {});
  SafetensorsFile file(path);
  torch::Tensor out = torch::zeros({1000, 300});
  file.read_floats(*file.find("f32"), 0, 1000, 1000, 300, out.data_ptr<float>(), 300, true);
  EXPECT_TRUE(torch::equal(out, f32.t()));
  file.read_floats(*file.find("f16"), 0, 1000, 1000, 300, out.data_ptr<float>(), 300, true);
  EXPECT_TRUE(torch::equal(out, f16.t().to(torch::kFloat)));
  out = torch::zeros({300, 1000});
  file.read_floats(*file.find("f16"), 0, 300000, 300000, 1, out.data_ptr<float>(), 300000, false);
  EXPECT_TRUE(torch::equal(out, f16.to(torch::kFloat)));
  EXPECT_EQ(file.bytes_read(), 300000 * (4 + 2 + 2));
  std::remove(path.c_str());
}

TEST(Safetensors, MalformedFilesAreRefusedWithTheReason) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(refusal(raw_file("ok", ok, 8)), "");
  EXPECT_NE(refusal(temp_path("none")).find("No such file"), std::string::npos);
  {
    const std::string path = temp_path("tiny");
    std::ofstream(path) << "abc";
    EXPECT_NE(refusal(path).find("shorter than the 8 bytes"), std::string::npos);
  }
  EXPECT_NE(refusal(raw_file("length", ok, 8, 1000)).find("header length 1000 runs past the end"),
            std::string::npos);
  EXPECT_NE(refusal(raw_file("json", "{not json", 8)).find("the header is not JSON"),
            std::string::npos);
  EXPECT_NE(refusal(raw_file("array", "[1,2]", 8)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(
      refusal(raw_file("dtype", R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8))
          .find("dtype 'Q7' is not one ddptrain reads"),
      std::string::npos);
  EXPECT_NE(refusal(raw_file("range", ok, 4)).find("ends at byte 8 of the data, which holds 4"),
            std::string::npos);
  EXPECT_NE(
      refusal(raw_file("size", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 12))
          .find("hold 8 bytes, and shape [3] of F32 needs 12"),
      std::string::npos);
  EXPECT_NE(refusal(raw_file("overlap",
                             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             12))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(refusal(raw_file("twice",
                             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                             16))
                .find("names tensor 'a' twice"),
            std::string::npos);
  EXPECT_NE(
      refusal(raw_file("negative", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8))
          .find("not a whole number"),
      std::string::npos);
  EXPECT_NE(refusal(raw_file("fields", R"({"a":{"dtype":"F32"}})", 8)).find("needs \"dtype\""),
            std::string::npos);
  EXPECT_NE(refusal(raw_file("meta", R"({"__metadata__":{"k":1}})", 0)).find("is not a string"),
            std::string::npos);
}

// A file cut short after it was written whole (a copy that did not finish).
// Shards fill up to the cap in order; a tensor larger than the cap sits alone in its own.
TEST(Safetensors, ShardsFillUpToTheCapInOrder) {
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(shard_ranges({10, 20, 30}, 100), (Ranges{{0, 3}}));
  EXPECT_EQ(shard_ranges({40, 40, 40, 40}, 100), (Ranges{{0, 2}, {2, 4}}));
  EXPECT_EQ(shard_ranges({10, 500, 10, 10}, 100), (Ranges{{0, 1}, {1, 2}, {2, 4}}));
  EXPECT_EQ(shard_ranges({}, 100), Ranges{});
  EXPECT_EQ(shard_file_name(0, 12), "model-00001-of-00012.safetensors");
}

TEST(Safetensors, TruncatedFileIsRefused) {
  const std::string path = temp_path("cut.safetensors");
  write_safetensors(path, {{"a", torch::ones({4})}, {"b", torch::ones({4})}}, {});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  EXPECT_NE(refusal(path).find("tensor 'b' ends at byte 32 of the data, which holds 27"),
            std::string::npos);
}

}  // namespace
}  // namespace ddpt
