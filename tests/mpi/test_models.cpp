// The built-in GPT and CNN under the data-parallel engine, mixed precision and compressed
// gradients. Runs at any world size; ctest runs it at 1, 2 and 3 ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "comm/mpi_comm.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "step/trainer.hpp"
#include "support/training_fixture.hpp"

namespace ddpt::testing {
namespace {

// ||a - b|| / ||b|| over all parameters as one vector (GPT's zero-initialised biases would make a
// per-tensor ratio meaningless before training).
double relative_difference(const std::vector<torch::Tensor>& a,
                           const std::vector<torch::Tensor>& b) {
  std::vector<torch::Tensor> flat_a;
  std::vector<torch::Tensor> flat_b;
  for (const auto& t : a) flat_a.push_back(t.flatten());
  for (const auto& t : b) flat_b.push_back(t.flatten());
  const torch::Tensor va = torch::cat(flat_a);
  const torch::Tensor vb = torch::cat(flat_b);
  return (va - vb).norm().item<double>() / vb.norm().item<double>();
}

TEST(Models, GptOnNRanksEqualsOneRank) {
  const Config config = small_gpt();
  const auto initial = initial_parameters(config);
  const auto on_n_ranks = train_and_get_parameters(config, MPI_COMM_WORLD);
  const auto on_one_rank = train_and_get_parameters(config, MPI_COMM_SELF);
  EXPECT_GT(relative_difference(on_one_rank, initial), 1e-3) << "training did not move";
  EXPECT_LT(relative_difference(on_n_ranks, on_one_rank), 1e-5);
}

// Each rank normalises its own batch (as PyTorch DDP without SyncBatchNorm), so N ranks do not
// equal one rank; what must hold is that every rank ends with rank 0's running statistics and the
// same parameters, and that the loss falls.
TEST(Models, CnnBuffersFollowRankZero) {
  Config config = small_cnn();
  config.train.steps = 30;
  config.log.every = 10;
  MpiComm comm(MPI_COMM_WORLD);
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const DataSplits data = make_datasets(config.data, config.run.seed);
  auto model = make_model(config.model, data.train->info());
  TrainingRun training(run_options(config, comm.size()),
                       RunParts{comm, plan_sharding(config, comm.size(), comm.device()), group,
                                *model, *data.train});
  DiscardedOutput output;
  const std::vector<StepRecord> records = training.run(output).records;
  ASSERT_EQ(records.size(), 3u);
  EXPECT_LT(records.back().loss, records.front().loss);
  training.trainer().sync_buffers();  // as the next step would
  const auto buffers = model->named_buffers();
  ASSERT_FALSE(buffers.empty());
  for (const auto& b : buffers) {
    const torch::Tensor all = comm.all_gather(b.tensor.contiguous());
    for (int r = 1; r < comm.size(); ++r) {
      EXPECT_TRUE(all[r].equal(all[0])) << b.name << " differs on rank " << r;
    }
  }
  for (const auto& p : model->named_parameters()) {
    const torch::Tensor all = comm.all_gather(p.tensor.detach().contiguous());
    for (int r = 1; r < comm.size(); ++r) {
      EXPECT_TRUE(all[r].equal(all[0])) << p.name << " differs on rank " << r;
    }
  }
}

// bf16 autocast keeps weights and the optimizer in fp32: over 50 steps the logged losses stay
// within 2% of the fp32 run (bf16 has 8 significant bits, about 0.4% per rounding).
TEST(Models, Bf16LossesFollowFp32Over50Steps) {
  Config config = small_config(OptimizerType::kAdamW);
  config.train.steps = 50;
  config.log.every = 5;
  Config bf16 = config;
  bf16.train.precision = Precision::kBf16;
  const std::vector<StepRecord> full = train(config, MPI_COMM_WORLD).records;
  const std::vector<StepRecord> mixed = train(bf16, MPI_COMM_WORLD).records;
  ASSERT_EQ(full.size(), 10u);
  ASSERT_EQ(mixed.size(), full.size());
  double largest = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    // Checked first: std::max(largest, NaN) would keep largest.
    ASSERT_TRUE(std::isfinite(mixed[i].loss) && std::isfinite(full[i].loss))
        << "row " << i << ": bf16 loss " << mixed[i].loss << ", fp32 loss " << full[i].loss;
    largest = std::max(largest, std::abs(mixed[i].loss - full[i].loss) / full[i].loss);
  }
  EXPECT_LT(largest, 0.02);
  EXPECT_GT(largest, 0.0) << "bf16 gave bit-identical losses: autocast did not engage";
  EXPECT_LT(full.back().loss, full.front().loss);
  std::cout << "largest relative difference of the bf16 losses: " << largest << "\n";
}

// ddp.compress = bf16 rounds each bucket to bf16 before the all-reduce: close to fp32, not equal.
// A rank alone reduces nothing, so nothing is rounded: equal.
TEST(Models, Bf16CompressedGradientsStayClose) {
  Config config = small_config(OptimizerType::kAdamW);
  config.train.batch_size = 8;
  Config compressed = config;
  compressed.ddp.compress = WirePrecision::kBf16;
  const auto exact = train_and_get_parameters(config, MPI_COMM_WORLD);
  const auto rounded = train_and_get_parameters(compressed, MPI_COMM_WORLD);
  const double difference = max_relative_difference(rounded, exact);
  EXPECT_LT(difference, 1e-2);
  if (world_size() == 1) {
    EXPECT_EQ(difference, 0.0);
  } else {
    EXPECT_GT(difference, 0.0);
  }
}

// model.activation_checkpointing recomputes each block in backward: the same run, bit for bit
// (parameters, batch-norm statistics, logged losses), with dropout drawing the same masks again
// and the statistics moved once per step.
void expect_same_run_with_checkpointing(Config config, const char* what) {
  const TrainedRun plain = train(config, MPI_COMM_WORLD);
  config.model.activation_checkpointing = true;
  const TrainedRun recomputed = train(config, MPI_COMM_WORLD);
  ASSERT_EQ(plain.params.size(), recomputed.params.size());
  for (size_t i = 0; i < plain.params.size(); ++i) {
    EXPECT_TRUE(torch::equal(plain.params[i], recomputed.params[i])) << what << ": parameter " << i;
  }
  ASSERT_EQ(plain.buffers.size(), recomputed.buffers.size());
  for (size_t i = 0; i < plain.buffers.size(); ++i) {
    EXPECT_TRUE(torch::equal(plain.buffers[i], recomputed.buffers[i])) << what << ": buffer " << i;
  }
  ASSERT_EQ(plain.records.size(), recomputed.records.size());
  for (size_t i = 0; i < plain.records.size(); ++i) {
    EXPECT_EQ(plain.records[i].loss, recomputed.records[i].loss) << what << ": row " << i;
  }
}

TEST(Models, ActivationCheckpointingChangesNothing) {
  Config gpt = small_gpt();
  gpt.model.dropout = 0.1;
  gpt.log.every = 1;
  expect_same_run_with_checkpointing(gpt, "GPT with dropout");
  gpt.train.precision = Precision::kBf16;
  expect_same_run_with_checkpointing(gpt, "GPT with dropout, bf16");
  expect_same_run_with_checkpointing(small_cnn(), "CNN with batch norm");
  Config mlp = small_config(OptimizerType::kAdamW);
  mlp.log.every = 1;
  expect_same_run_with_checkpointing(mlp, "MLP");
}

}  // namespace
}  // namespace ddpt::testing
