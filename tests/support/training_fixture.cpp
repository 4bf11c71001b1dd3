#include "support/training_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "comm/host_group.hpp"
#include "comm/mpi_comm.hpp"
#include "data/synthetic_classification.hpp"
#include "models/freeze.hpp"
#include "optim/distributed_optimizer.hpp"
#include "run/training_run.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"

namespace ddpt::testing {

Config small_config(OptimizerType optimizer) {
  Config c;
  c.run.seed = 7;
  c.data.samples = 2048;
  c.data.features = 32;
  c.data.classes = 5;
  c.data.teacher_hidden = 16;
  c.model.type = ModelType::kMlp;
  c.model.hidden = "64,48";
  c.train.batch_size = 8;
  c.train.steps = 6;
  c.train.threads = 1;
  c.optim.type = optimizer;
  c.optim.lr = optimizer == OptimizerType::kSgd ? 0.05 : 1e-3;
  c.optim.momentum = 0.9;
  c.optim.weight_decay = 0.01;
  c.log.every = 1000;  // no progress lines
  return c;
}

// 12 windows per step: divides evenly over 1, 2, 3 (and 4, 6) ranks.
Config small_gpt() {
  Config c;
  c.run.seed = 21;
  c.data.type = DataType::kSyntheticTokens;
  c.data.samples = 240;
  c.data.block = 16;
  c.data.vocab = 32;
  c.model.type = ModelType::kGpt;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 32;
  c.train.global_batch = 12;
  c.train.steps = 5;
  c.train.threads = 1;
  // SGD: AdamW divides by the root of tiny second moments, which turns float summation-order
  // noise in near-zero gradients into visible differences.
  c.optim.type = OptimizerType::kSgd;
  c.optim.lr = 0.1;
  c.log.every = 1000;
  return c;
}

Config small_cnn() {
  Config c;
  c.run.seed = 4;
  c.data.type = DataType::kSyntheticImages;
  c.data.samples = 256;
  c.data.channels = 2;
  c.data.image_size = 8;
  c.data.classes = 4;
  c.model.type = ModelType::kCnn;
  c.model.channels = "4,8";
  c.train.global_batch = 12;
  c.train.steps = 4;
  c.train.threads = 1;
  c.optim.type = OptimizerType::kSgd;
  c.optim.lr = 0.05;
  c.log.every = 1;
  return c;
}

TrainedRun train(const Config& config, MPI_Comm comm) {
  MpiComm communicator(comm);
  HostGroup group(comm, /*watchdog=*/nullptr);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const DataSplits data = make_datasets(config.data, config.run.seed);
  const ShardingPlan sharding = plan_sharding(config, communicator.size(), communicator.device());
  auto model = make_model(config.model, data.train->info(), sharding.initial_values());
  freeze_parameters(*model, config.model.freeze);
  TrainingRun training(run_options(config, communicator.size()),
                       RunParts{communicator, sharding, group, *model, *data.train});
  DiscardedOutput output;
  TrainedRun run;
  run.records = training.run(output).records;
  run.facts = training.trainer().facts();
  run.averages = training.trainer().ema_averages();          // gathers and releases under ZeRO-3
  const auto whole = training.trainer().whole_parameters();  // ZeRO-3: gathered to be read
  for (const auto& p : model->named_parameters()) {
    run.params.push_back(p.tensor.detach().clone());
    run.trains.push_back(p.tensor.requires_grad());
  }
  for (const auto& b : model->named_buffers()) run.buffers.push_back(b.tensor.detach().clone());
  return run;
}

namespace {

int64_t count_not_finite(const torch::Tensor& t) {
  return t.numel() - torch::isfinite(t).sum().item<int64_t>();
}

}  // namespace

std::vector<torch::Tensor> train_and_get_parameters(const Config& config, MPI_Comm comm) {
  return train(config, comm).params;
}

double max_relative_difference(const std::vector<torch::Tensor>& a,
                               const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double denominator = b[i].norm().item<double>();
    const double difference = (a[i] - b[i]).norm().item<double>() / denominator;
    // std::max(worst, NaN) keeps worst: a parameter that became NaN (or infinite) would pass.
    // It fails here, naming the parameter, and the NaN returned fails EXPECT_LT and EXPECT_GT.
    // (An all-zero b gives x / 0: not finite either.)
    if (!std::isfinite(difference)) {
      ADD_FAILURE() << "parameter " << i << " (shape " << a[i].sizes() << "): relative difference "
                    << difference << ", not finite (" << count_not_finite(a[i])
                    << " non-finite values in the first, " << count_not_finite(b[i])
                    << " in the second" << (denominator == 0 ? ", which is all zero" : "") << ")";
      return std::numeric_limits<double>::quiet_NaN();
    }
    worst = std::max(worst, difference);
  }
  return worst;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

}  // namespace ddpt::testing

namespace ddpt::testing {

std::vector<torch::Tensor> initial_parameters(const Config& config) {
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  auto model = make_model(config.model, deck_data_info(config.data));
  std::vector<torch::Tensor> params;
  for (const auto& p : model->named_parameters()) params.push_back(p.tensor.detach().clone());
  return params;
}

std::string torchscript_test_model() {
  const char* path = std::getenv("DDPTRAIN_TEST_TORCHSCRIPT");
  return path ? path : "";
}

std::string torchscript_blocks_test_model() {
  const char* path = std::getenv("DDPTRAIN_TEST_TORCHSCRIPT_BLOCKS");
  return path ? path : "";
}

std::string torchscript_branches_test_model() {
  const char* path = std::getenv("DDPTRAIN_TEST_TORCHSCRIPT_BRANCHES");
  return path ? path : "";
}

}  // namespace ddpt::testing
