// Fuzz target: the data files of data.type = hdf5 and tokens, opened as make_datasets opens them
// for training (named validation datasets, and a validation fraction) and read a few batches from,
// as the sampler would. Input: the file's bytes (seeds: `ddptrain make-data` outputs,
// tests/fuzz/corpus/data_file).
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>

#include "config/config.hpp"
#include "fuzz_support.hpp"
#include "setup/make_datasets.hpp"

namespace {

// First, middle and last rows, out of order and with a repeat, as a shuffled batch has them.
void read_some(const ddpt::Dataset* dataset) {
  if (dataset == nullptr || dataset->size() == 0) return;
  const int64_t n = dataset->size();
  const torch::Tensor rows = torch::tensor({n - 1, int64_t{0}, n / 2, n - 1});
  const ddpt::Batch batch = dataset->get(rows);
  (void)batch;
}

void open_and_read(const ddpt::DataConfig& data) {
  const ddpt::DataSplits splits = ddpt::make_datasets(data, /*seed=*/1);
  (void)splits.train->info();
  (void)splits.train->describe();
  read_some(splits.train.get());
  read_some(splits.val.get());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ddpt::fuzz::quiet_logging();
  torch::set_num_threads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  ddpt::DataConfig data;
  data.path = ddpt::fuzz::write_input(bytes, size, "data.h5");
  data.classes = 3;
  data.vocab = 0;  // from the file's attribute
  data.block = 8;

  data.type = ddpt::DataType::kHdf5;
  data.val_inputs = "val_inputs";
  data.val_targets = "val_targets";
  ddpt::fuzz::run_under_contract([&] { open_and_read(data); });
  data.val_inputs.clear();
  data.val_targets.clear();
  data.val_fraction = 0.25;
  ddpt::fuzz::run_under_contract([&] { open_and_read(data); });

  data.type = ddpt::DataType::kTokens;
  data.val_fraction = 0;
  data.val_tokens = "val_tokens";
  ddpt::fuzz::run_under_contract([&] { open_and_read(data); });
  data.val_tokens.clear();
  data.val_fraction = 0.25;
  ddpt::fuzz::run_under_contract([&] { open_and_read(data); });
  return 0;
}
