#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "h5/h5_check.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_fletcher32.hpp"
#include "h5/h5_series.hpp"
#include "h5/h5_tensor.hpp"

namespace ddpt {
namespace {

class H5 : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ddptrain_h5_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(H5, SeriesAndAttributesRoundTrip) {
  {
    H5File file = H5File::create(path("a.h5"));
    file.write_attribute("name", std::string("run α"));
    file.write_attribute("world_size", int64_t{3});
    const H5Group group = file.create_group("train");
    H5Series loss = group.create_series("loss", H5Series::Type::kFloat64);
    H5Series step = group.create_series("step", H5Series::Type::kInt64);
    for (int i = 0; i < 2500; ++i) {  // more than one chunk
      loss.append(1.0 / (i + 1));
      step.append(i);
    }
    EXPECT_EQ(loss.size(), 2500);
  }
  H5File file = H5File::open_read(path("a.h5"));
  EXPECT_EQ(file.read_string_attribute("name"), "run α");
  EXPECT_EQ(file.read_int_attribute("world_size"), 3);
  const H5Group group = file.open_group("train");
  const auto loss = group.read_series("loss");
  const auto step = group.read_series("step");
  ASSERT_EQ(loss.size(), 2500u);
  ASSERT_EQ(step.size(), 2500u);
  EXPECT_DOUBLE_EQ(loss[0], 1.0);
  EXPECT_DOUBLE_EQ(loss[2499], 1.0 / 2500);
  EXPECT_EQ(step[1234], 1234.0);
}

TEST_F(H5, MissingAndCorruptFilesNameTheFile) {
  try {
    H5File::open_read(path("missing.h5"));
    FAIL() << "no error for a missing file";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.h5"), std::string::npos);
    EXPECT_EQ(e.code(), ExitCode::kData);
  }
  std::ofstream(path("text.h5")) << "not an HDF5 file\n";
  try {
    H5File::open_read(path("text.h5"));
    FAIL() << "no error for a text file";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("text.h5"), std::string::npos);
  }
}

TEST_F(H5, Hdf5FilesAreKnownByTheirSignature) {
  H5File::create(path("a.h5")).close();
  EXPECT_TRUE(is_hdf5_file(path("a.h5")));
  std::ofstream(path("model.safetensors"), std::ios::binary)
      << std::string("\x08\0\0\0\0\0\0\0{}      ", 16);
  EXPECT_FALSE(is_hdf5_file(path("model.safetensors")));
  std::ofstream(path("short.h5"), std::ios::binary) << "\x89HDF";  // the signature's first half
  EXPECT_FALSE(is_hdf5_file(path("short.h5")));
  EXPECT_FALSE(is_hdf5_file(dir_.string()));
  EXPECT_FALSE(is_hdf5_file(path("missing.h5")));
}

TEST_F(H5, FailedCallCarriesTheHdf5ErrorStack) {
  H5File file = H5File::create(path("b.h5"));
  try {
    file.open_group("no_such_group");
    FAIL() << "no error for a missing group";
  } catch (const H5Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("H5Gopen2"), std::string::npos) << message;
    EXPECT_NE(message.find("doesn't exist"), std::string::npos) << message;
    EXPECT_EQ(e.code(), ExitCode::kData);
    EXPECT_FALSE(e.where().empty());
  }
}

// The system's reason for a failed call survives HDF5's error handling: a checkpoint's message
// names it ("No space left on device") though HDF5's own messages do not.
TEST_F(H5, FailedCallKeepsTheSystemError) {
  try {
    H5File::create(path("no_such_folder/c.h5"));
    FAIL() << "no error for a file in a missing folder";
  } catch (const H5Error& e) {
    EXPECT_EQ(e.system_error(), ENOENT) << e.what();
  }
}

}  // namespace
}  // namespace ddpt

namespace ddpt {
namespace {

// Sharded state: runs of elements (cutting through rows and planes) written by separate calls
// fill a 3-D dataset exactly, and read back by run or whole.
TEST_F(H5, TensorPartsFillAMultiDimensionalDatasetInRowMajorOrder) {
  const torch::Tensor whole = torch::arange(3 * 4 * 5, torch::kFloat).reshape({3, 4, 5});
  const std::vector<std::pair<int64_t, int64_t>> runs{{0, 7}, {7, 26}, {33, 0}, {33, 27}};
  {
    H5File file = H5File::create(path("parts.h5"));
    for (size_t k = 0; k < runs.size(); ++k) {
      const auto [first, count] = runs[k];
      file.write_tensor_part("t" + std::to_string(k), {3, 4, 5}, first,
                             whole.view(-1).narrow(0, first, count));
    }
    H5Dataset dataset = file.create_dataset("all", torch::kFloat, {3, 4, 5});
    for (const auto& [first, count] : runs) {
      dataset.write_elements(first, whole.view(-1).narrow(0, first, count));
    }
  }
  const H5File file = H5File::open_read(path("parts.h5"));
  EXPECT_TRUE(torch::equal(file.read_tensor("all"), whole));
  for (const auto& [first, count] : runs) {
    EXPECT_TRUE(torch::equal(file.read_tensor_part("all", first, count),
                             whole.view(-1).narrow(0, first, count)))
        << "elements " << first << " + " << count;
  }
  // Each run is at most 2 x rank - 1 boxes that tile it in order.
  for (int64_t first = 0; first < 60; first += 7) {
    for (int64_t count = 0; first + count <= 60; count += 5) {
      const auto boxes = element_boxes({3, 4, 5}, first, count);
      ASSERT_LE(boxes.size(), 5u);
      int64_t next = first;
      for (const ElementBox& box : boxes) {
        const int64_t flat =
            static_cast<int64_t>((box.start[0] * 4 + box.start[1]) * 5 + box.start[2]);
        EXPECT_EQ(flat, next) << "run " << first << " + " << count;
        next += static_cast<int64_t>(box.extent[0] * box.extent[1] * box.extent[2]);
      }
      EXPECT_EQ(next, first + count) << "run " << first << " + " << count;
    }
  }
  // Each single-run dataset holds its run where it belongs.
  const torch::Tensor second = file.read_tensor("t1").view(-1);
  EXPECT_TRUE(torch::equal(second.narrow(0, 7, 26), whole.view(-1).narrow(0, 7, 26)));
}

// The one-thread-at-a-time rule is enforced while a background write is in flight: an HDF5 call
// without the lock aborts naming the call (a missed lock is otherwise a rare corruption).
// HDF5's Fletcher32 filter sums with ddptrain's fletcher32() (h5/h5_fletcher32.hpp).
TEST_F(H5, Fletcher32SumsAreDdptrains) {
  torch::manual_seed(3);
  const torch::Tensor values = torch::randn({3000, 999});  // 3 chunks of at most 4 MiB
  const uint64_t before = hdf5_fletcher32_calls();
  {
    const H5File file = H5File::create(path("a.h5"));
    file.write_tensor("values", values, true);
  }
  const uint64_t after_write = hdf5_fletcher32_calls();
  EXPECT_GE(after_write - before, 3u) << "HDF5's filter did not call ddptrain's sum on writing";
  const H5File file = H5File::open_read(path("a.h5"));
  EXPECT_TRUE(torch::equal(file.read_tensor("values"), values));
  EXPECT_GE(hdf5_fletcher32_calls() - after_write, 3u) << "nor on reading";
  EXPECT_NE(hdf5_checksum_text().find("sums by ddptrain ("), std::string::npos)
      << hdf5_checksum_text();
}

// A one-chunk dataset of 12 uint8 values whose stored chunk (values, then the sum) is `chunk`,
// read back.
torch::Tensor read_stored_fletcher32_chunk(const std::string& file_path,
                                           const std::vector<uint8_t>& chunk) {
  {
    const H5File file = H5File::create(file_path);
    const H5Dataset dataset = file.create_dataset("values", torch::kUInt8, {12});
    const hsize_t offset[1] = {0};
    DDPT_CHECK_H5(
        H5Dwrite_chunk(dataset.hdf5_id(), H5P_DEFAULT, 0, offset, chunk.size(), chunk.data()));
  }
  const H5File file = H5File::open_read(file_path);
  return file.read_tensor("values");
}

TEST_F(H5, Fletcher32ReadsTheOldByteOrderAndRefusesAWrongSum) {
  std::vector<uint8_t> values = {1, 0, 2, 0, 0xfe, 0xff, 0x34, 0x12, 0, 0x80, 9, 0};
  const torch::Tensor expected = torch::from_blob(values.data(), {12}, torch::kUInt8).clone();
  const uint32_t sum = fletcher32(values.data(), values.size());
  auto with_sum = [&](uint32_t stored) {  // HDF5 stores the sum little-endian
    std::vector<uint8_t> chunk = values;
    for (int k = 0; k < 4; ++k) chunk.push_back(static_cast<uint8_t>(stored >> (8 * k)));
    return chunk;
  };
  EXPECT_TRUE(
      torch::equal(read_stored_fletcher32_chunk(path("right.h5"), with_sum(sum)), expected));
  // HDF5 before 1.6.3 on little-endian machines swapped the bytes of each 16-bit half; HDF5's
  // filter accepts both orders.
  const uint32_t old_order = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
  ASSERT_NE(old_order, sum);
  EXPECT_TRUE(
      torch::equal(read_stored_fletcher32_chunk(path("old.h5"), with_sum(old_order)), expected));
  try {
    read_stored_fletcher32_chunk(path("wrong.h5"), with_sum(sum ^ 0x100));
    FAIL() << "a wrong sum was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("Fletcher32"), std::string::npos) << e.what();
  }
}

TEST(H5LockDeathTest, AnUnlockedCallWhileHdf5IsSharedAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto unlocked_call = [] {
    const Hdf5SharedScope shared;
    H5Id space(DDPT_CHECK_H5(H5Screate(H5S_SCALAR)));
  };
  EXPECT_DEATH(unlocked_call(), "HDF5 call without the HDF5 lock .*H5Screate\\(H5S_SCALAR\\)");
}

TEST(H5Lock, LockedCallsAndUnsharedCallsRun) {
  { H5Id unshared(DDPT_CHECK_H5(H5Screate(H5S_SCALAR))); }
  const Hdf5SharedScope shared;
  const Hdf5Lock lock;
  H5Id space(DDPT_CHECK_H5(H5Screate(H5S_SCALAR)));
  EXPECT_TRUE(space.valid());
}

}  // namespace
}  // namespace ddpt
