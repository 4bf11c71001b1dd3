// HDF5 datasets in: dtype mapping, hyperslab row reads, token windows, and the errors a file that
// does not fit gives (DataError, exit 3, naming the file and the object).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "data/h5_array_dataset.hpp"
#include "data/row_subset.hpp"
#include "data/token_stream.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_tensor.hpp"
#include "run/evaluate.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

class H5Data : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("ddptrain_h5_data_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    torch::manual_seed(11);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // inputs [rows, 3, 2] float32 and integer targets with a `classes` attribute.
  void write_classification(const std::string& file, int64_t rows) {
    H5File f = H5File::create(path(file));
    inputs_ = torch::randn({rows, 3, 2});
    targets_ = torch::randint(0, 4, {rows}, torch::kLong);
    H5Dataset x = f.create_dataset("x", torch::kFloat, inputs_.sizes().vec());
    x.write_rows(0, inputs_);
    H5Dataset y = f.create_dataset("y", torch::kLong, {rows}, H5StoredAs::kUint16);
    y.write_rows(0, targets_);
    y.write_attribute("classes", int64_t{4});
  }

  // Runs `make` and returns the DataError message (empty if none was thrown).
  template <class F>
  std::string data_error(F make) {
    try {
      make();
    } catch (const DataError& e) {
      EXPECT_EQ(e.code(), ExitCode::kData);
      // A file's layout and labels are the same for every rank that opens it.
      EXPECT_EQ(e.raised(), Raised::kAllRanks) << e.what();
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

TEST_F(H5Data, TensorDtypesRoundTripAndNarrowTypesAreWidened) {
  const torch::Tensor bf16 = torch::randn({5, 7}).to(torch::kBFloat16);
  const torch::Tensor i32 = torch::randint(-1000, 1000, {9}, torch::kInt);
  const torch::Tensor u8 = torch::randint(0, 255, {4, 4}, torch::kByte);
  const torch::Tensor ids = torch::randint(0, 70000, {100}, torch::kLong);
  {
    H5File f = H5File::create(path("types.h5"));
    f.write_tensor("bf16", bf16, true);
    f.write_tensor("i32", i32, true);
    f.write_tensor("u8", u8, true);
    f.create_dataset("u16", torch::kLong, {100}, H5StoredAs::kUint16)
        .write_rows(0, ids.remainder(65536));
    f.create_dataset("u32", torch::kLong, {100}, H5StoredAs::kUint32).write_rows(0, ids);
  }
  H5File f = H5File::open_read(path("types.h5"));
  const torch::Tensor bf16_back = f.read_tensor("bf16");
  EXPECT_EQ(bf16_back.scalar_type(), torch::kBFloat16);  // stored as float32, marked bf16
  EXPECT_TRUE(torch::equal(bf16_back, bf16));
  EXPECT_TRUE(torch::equal(f.read_tensor("i32"), i32));
  EXPECT_TRUE(torch::equal(f.read_tensor("u8"), u8));
  const H5Dataset u16 = H5Dataset::open(f, "u16");
  EXPECT_EQ(u16.stored_type(), "uint16");
  EXPECT_EQ(u16.dtype(), torch::kInt);
  EXPECT_TRUE(torch::equal(u16.read_range(0, 100).to(torch::kLong), ids.remainder(65536)));
  const H5Dataset u32 = H5Dataset::open(f, "u32");
  EXPECT_EQ(u32.dtype(), torch::kLong);
  EXPECT_TRUE(torch::equal(u32.read_range(0, 100), ids));
}

TEST_F(H5Data, RowReadsReturnExactlyTheRowsAskedForInTheirOrder) {
  write_classification("rows.h5", 2000);  // several chunks
  H5ArrayDataset data(path("rows.h5"), "x", "y", /*classes_if_unset=*/0);
  EXPECT_EQ(data.size(), 2000);
  EXPECT_EQ(data.info().task, Task::kClassification);
  EXPECT_EQ(data.info().outputs, 4);  // from the attribute
  EXPECT_EQ(data.info().sample_shape, (std::vector<int64_t>{3, 2}));
  // Unsorted, with repeats, runs of neighbours and both ends.
  const torch::Tensor indices = torch::tensor({1999, 5, 6, 7, 5, 0, 1024, 1023, 640}, torch::kLong);
  const Batch batch = data.get(indices);
  EXPECT_TRUE(torch::equal(batch.inputs, inputs_.index_select(0, indices)));
  EXPECT_TRUE(torch::equal(batch.targets, targets_.index_select(0, indices)));
  EXPECT_EQ(batch.targets.scalar_type(), torch::kLong);

  RowSubset tail(std::make_shared<H5ArrayDataset>(path("rows.h5"), "x", "y", 0), 1500, 500,
                 "validation");
  EXPECT_EQ(tail.size(), 500);
  EXPECT_TRUE(torch::equal(tail.get(torch::tensor({0, 499}, torch::kLong)).inputs,
                           inputs_.index_select(0, torch::tensor({1500, 1999}, torch::kLong))));
}

TEST_F(H5Data, RegressionTargetsAreFloatRows) {
  {
    H5File f = H5File::create(path("reg.h5"));
    f.write_tensor("inputs", torch::randn({50, 4}), true);
    f.write_tensor("targets", torch::randn({50}, torch::kDouble), true);
  }
  H5ArrayDataset data(path("reg.h5"), "inputs", "targets", 10);
  EXPECT_EQ(data.info().task, Task::kRegression);
  EXPECT_EQ(data.info().outputs, 1);
  const Batch b = data.get(torch::tensor({3, 1}, torch::kLong));
  EXPECT_EQ(b.targets.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(b.targets.scalar_type(), torch::kFloat);
}

TEST_F(H5Data, FilesThatDoNotFitNameTheFileAndTheObject) {
  {
    H5File f = H5File::create(path("bad.h5"));
    f.write_tensor("inputs", torch::randn({10, 4}), true);
    f.write_tensor("flat", torch::randn({10}), true);
    f.write_tensor("short", torch::randint(0, 3, {9}, torch::kLong), true);
    f.write_tensor("labels2d", torch::randint(0, 3, {10, 2}, torch::kLong), true);
    f.write_tensor("labels", torch::tensor({0, 1, 2, 7, 0, 1, 2, 0, 1, 2}, torch::kLong), true);
    f.write_attribute("text", std::string("x"));
    // A dataset of strings: a type ddptrain does not read.
    H5Id type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type.get(), 8);
    const hsize_t n = 10;
    H5Id space(H5Screate_simple(1, &n, nullptr));
    H5Id strings(H5Dcreate2(f.hdf5_id(), "names", type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT));
  }
  const std::string file = path("bad.h5");
  auto expect_names = [&](const std::string& message, const std::string& object,
                          const std::string& detail) {
    EXPECT_NE(message.find("bad.h5"), std::string::npos) << message;
    EXPECT_NE(message.find("'" + object + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(detail), std::string::npos) << message;
  };
  expect_names(data_error([&] { H5ArrayDataset(file, "missing", "labels", 3); }), "missing",
               "is missing");
  expect_names(data_error([&] { H5ArrayDataset(file, "names", "labels", 3); }), "names",
               "does not read");
  expect_names(data_error([&] { H5ArrayDataset(file, "flat", "labels", 3); }), "flat",
               "expected [samples, features");
  expect_names(data_error([&] { H5ArrayDataset(file, "inputs", "short", 3); }), "short", "10 rows");
  expect_names(data_error([&] { H5ArrayDataset(file, "inputs", "labels2d", 3); }), "labels2d",
               "must be 1-D");
  // Labels are all checked when the file is opened, not when a batch first draws row 3.
  expect_names(data_error([&] { H5ArrayDataset(file, "inputs", "labels", 3); }), "labels",
               "row 3: label 7 is outside [0, 3)");
  expect_names(data_error([&] { TokenStream(file, "inputs", 4, 4, 10); }), "inputs", "1-D integer");
  expect_names(data_error([&] { TokenStream(file, "short", 4, 4, 0); }), "short", "set data.vocab");
}

TEST_F(H5Data, TokenWindowsAreShiftedByOne) {
  const torch::Tensor stream = torch::arange(0, 103, torch::kLong).remainder(50);
  {
    H5File f = H5File::create(path("tok.h5"));
    H5Dataset d = f.create_dataset("tokens", torch::kLong, {103}, H5StoredAs::kUint16);
    d.write_rows(0, stream);
    d.write_attribute("vocab", int64_t{50});
  }
  TokenStream tokens(path("tok.h5"), "tokens", /*block=*/8, /*stride=*/8, /*vocab_if_unset=*/0);
  EXPECT_EQ(tokens.size(), (103 - 8 - 1) / 8 + 1);  // 12 windows; the last ends at token 96
  EXPECT_EQ(tokens.info().outputs, 50);
  const Batch b = tokens.get(torch::tensor({11, 2}, torch::kLong));
  using torch::indexing::Slice;
  EXPECT_TRUE(torch::equal(b.inputs[0], stream.index({Slice(88, 96)})));
  EXPECT_TRUE(torch::equal(b.targets[0], stream.index({Slice(89, 97)})));
  EXPECT_TRUE(torch::equal(b.inputs[1], stream.index({Slice(16, 24)})));
  TokenStream every_offset(path("tok.h5"), "tokens", 8, 1, 0);
  EXPECT_EQ(every_offset.size(), 103 - 8);
  const std::string error =
      data_error([&] { TokenStream(path("tok.h5"), "tokens", 8, 8, 0).get(torch::tensor({0})); });
  EXPECT_TRUE(error.empty()) << error;
}

TEST(EvalShares, ContiguousSharesCoverEveryRowOnce) {
  for (const int world : {1, 2, 3, 7}) {
    for (const int64_t rows : {0, 1, 5, 512, 1001}) {
      int64_t next = 0;
      for (int r = 0; r < world; ++r) {
        const auto [first, count] = share_of_rows(rows, r, world);
        EXPECT_EQ(first, next) << rows << " rows, rank " << r << "/" << world;
        EXPECT_LE(count, rows / world + 1);
        EXPECT_GE(count, rows / world);
        next = first + count;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

}  // namespace
}  // namespace ddpt
