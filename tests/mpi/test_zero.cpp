// ZeRO-1, 2 and 3 (ddp.zero = 1, 2, 3) against plain data parallel at the same world size: the same
// training (AdamW and SGD, gradient clipping, gradient accumulation, frozen parameters, a moving
// average (ZeRO-3: of each rank's shard), bf16 on the wire; the MLP, and small versions of the GPT
// and CNN decks for 30 steps) must end within 1e-6 (relative, per parameter) of it, with each rank
// holding only its share of the optimizer state (ZeRO-2: and of the gradients; ZeRO-3: and of the
// parameters, the MLP's hidden layers, the GPT's and the CNN's blocks gathered as they run, with
// prefetch and without). ctest runs it at 1, 2 and 3 ranks; the buckets are made small so that
// blocks cut through parameters and buckets hold padding. ctest's ranks share a node, so there
// ZeRO-1's buckets are reduce-scattered in shared memory and the ranks share one copy of the
// parameters (ddp/data_parallel.hpp); with bf16 on the wire, and ZeRO-2's pooled buckets always,
// the buckets go through MPI instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>

#include "comm/make_communicator.hpp"
#include "models/torchscript_model.hpp"
#include "setup/sharding.hpp"
#include "support/training_fixture.hpp"
#include "util/error.hpp"

namespace ddpt::testing {
namespace {

constexpr double kZeroTolerance =
    1e-6;  // the reduce-scatter may sum in another order than all-reduce
constexpr double kZeroMustMove = 1e-3;

struct ZeroCase {
  OptimizerType optimizer;
  int64_t grad_accum = 1;
  double clip = 0;
  std::string freeze;
  double ema_decay = 0;
  WirePrecision compress = WirePrecision::kNone;
  double tolerance = kZeroTolerance;
};

// 1000 and 2000 floats: the MLP's 5.7K values fall into 4 buckets of odd sizes.
void use_small_buckets(Config& config, int64_t first_floats, int64_t floats) {
  config.ddp.first_bucket_mb = static_cast<double>(first_floats) * 4 / 1048576.0;
  config.ddp.bucket_mb = static_cast<double>(floats) * 4 / 1048576.0;
}

Config zero_config(const ZeroCase& c) {
  Config config = small_config(c.optimizer);
  config.train.grad_accum = c.grad_accum;
  config.optim.clip = c.clip;
  config.model.freeze = c.freeze;
  config.train.ema_decay = c.ema_decay;
  config.ddp.compress = c.compress;
  config.log.every = 1;  // a record per step to compare
  use_small_buckets(config, 1000, 2000);
  return config;
}

void expect_state_shared_out(const TrainedRun& zero, const TrainedRun& plain, int64_t level,
                             bool moving_average, bool shared_memory) {
  // Each rank holds the state of its shard only; together, the whole state once.
  int64_t zero_bytes = zero.facts.optimizer_state_bytes;
  MPI_Allreduce(MPI_IN_PLACE, &zero_bytes, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(zero_bytes, plain.facts.optimizer_state_bytes);
  EXPECT_GT(plain.facts.optimizer_state_bytes, 0);
  // On one rank there is nothing to shard: ZeRO trains unsharded there (no reduce-scatter and
  // all-gather that would only copy).
  EXPECT_EQ(zero.facts.sharding.optimizer_sharded(), world_size() > 1);
  EXPECT_EQ(zero.facts.sharding.gradients_sharded(), world_size() > 1 && level >= 2);
  EXPECT_EQ(zero.facts.sharding.parameters_sharded(), world_size() > 1 && level == 3);
  if (zero.facts.sharding.parameters_sharded()) {
    // Together the ranks' shards hold every trainable parameter once, and the padding of their
    // blocks (under world size values per bucket).
    const int64_t trainable = plain.facts.bucketed_values * 4;
    const int64_t frozen = plain.facts.parameter_bytes - trainable;  // held whole by every rank
    int64_t held = zero.facts.held_parameter_bytes - frozen;
    MPI_Allreduce(MPI_IN_PLACE, &held, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_GE(held, trainable);
    EXPECT_LT(held, trainable + 4 * world_size() * 64);
    EXPECT_GT(zero.facts.largest_unit_bytes, 0);
    EXPECT_LT(zero.facts.largest_unit_bytes, plain.facts.parameter_bytes);
  }
  EXPECT_FALSE(plain.facts.sharding.optimizer_sharded());
  EXPECT_FALSE(plain.facts.sharding.gradients_sharded());
  if (world_size() > 1) {
    EXPECT_LT(zero.facts.optimizer_state_bytes, plain.facts.optimizer_state_bytes);
  }
  // On one node (ctest's ranks), ZeRO keeps one copy of the parameters in shared memory, unless a
  // moving average swaps itself into them.
  EXPECT_EQ(zero.facts.parameters_shared, world_size() > 1 && !moving_average && level < 3);
  EXPECT_FALSE(plain.facts.parameters_shared);
  // ZeRO-3 gathers its units into node-shared memory there (comm/node_all_gather.hpp), unless
  // ddp.shared_memory is off: then through MPI_Allgather.
  EXPECT_EQ(zero.facts.units_in_shared_memory,
            zero.facts.sharding.parameters_sharded() && shared_memory);
}

void expect_same_training(const TrainedRun& zero, const TrainedRun& plain, double tolerance,
                          const std::string& what) {
  EXPECT_LT(max_relative_difference(zero.params, plain.params), tolerance) << what;
  ASSERT_EQ(zero.averages.size(), plain.averages.size()) << what;
  if (!plain.averages.empty()) {
    EXPECT_LT(max_relative_difference(zero.averages, plain.averages), tolerance)
        << what << ": the moving averages";
    std::vector<torch::Tensor> trained;
    for (size_t i = 0; i < plain.params.size(); ++i) {
      if (plain.trains[i]) trained.push_back(plain.params[i]);
    }
    EXPECT_GT(max_relative_difference(plain.averages, trained), kZeroMustMove)
        << what << ": the averages are the weights";
  }
  ASSERT_EQ(zero.records.size(), plain.records.size()) << what;
  for (size_t i = 0; i < plain.records.size(); ++i) {
    EXPECT_NEAR(zero.records[i].loss, plain.records[i].loss,
                tolerance * std::abs(plain.records[i].loss))
        << what << ", record " << i;
    EXPECT_NEAR(zero.records[i].grad_norm, plain.records[i].grad_norm,
                10 * tolerance * plain.records[i].grad_norm)
        << what << ", record " << i << ": the global norm from the shards";
  }
}

// ||a - b|| / ||b|| over all parameters as one vector (the GPT's and CNN's zero-initialised
// biases would make a per-tensor ratio to the initial values infinite).
double moved(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  torch::Tensor squares = torch::zeros({}, torch::kDouble);
  torch::Tensor norms = torch::zeros({}, torch::kDouble);
  for (size_t i = 0; i < a.size(); ++i) {
    squares += (a[i] - b[i]).to(torch::kDouble).square().sum();
    norms += b[i].to(torch::kDouble).square().sum();
  }
  return (squares / norms).sqrt().item<double>();
}

// What a test checks of each ZeRO level's run beyond its match with plain data parallel (`what`
// names the level).
using EachLevel = std::function<void(const TrainedRun& run, const std::string& what)>;

// Trains `plain` without ZeRO, then with ddp.zero = 1, 2 and 3, and compares. ZeRO-3 runs twice:
// its units gathered in node-shared memory (ctest's ranks share a node) and through MPI
// (ddp.shared_memory = false); and without prefetch where `prefetch_off_too`, as well.
void expect_zero_matches_plain(const Config& plain, double tolerance, bool prefetch_off_too = false,
                               const EachLevel& each = {}) {
  const TrainedRun without = train(plain, MPI_COMM_WORLD);
  EXPECT_GT(moved(without.params, initial_parameters(plain)), kZeroMustMove)
      << "training did not move";
  struct Level {
    int64_t level;
    bool prefetch = true;
    bool shared_memory = true;
  };
  std::vector<Level> levels{{1}, {2}, {3}, {3, true, false}};
  if (prefetch_off_too) levels.push_back({3, false});
  for (const auto& [level, prefetch, shared_memory] : levels) {
    Config zero = plain;
    zero.ddp.zero = level;
    zero.ddp.prefetch = prefetch ? Prefetch::kOn : Prefetch::kOff;
    zero.ddp.shared_memory = shared_memory;
    const TrainedRun with_zero = train(zero, MPI_COMM_WORLD);
    const std::string what = std::to_string(world_size()) + " ranks, ZeRO-" +
                             std::to_string(level) + (prefetch ? "" : " without prefetch") +
                             (shared_memory ? "" : " through MPI") + " vs plain";
    // With micro-steps, ZeRO-2 sums each micro-step over the ranks and then the micro-steps,
    // (a1 + b1) + (a2 + b2), where the others sum each rank's micro-steps first,
    // (a1 + a2) + (b1 + b2): another rounding by construction. With LibTorch 2.6 the GPT deck's 30
    // steps ended 1.11e-6 apart at 2 ranks (under 1e-6 with LibTorch 1.13).
    const double allowed = level >= 2 && plain.train.grad_accum > 1 ? 2 * tolerance : tolerance;
    expect_same_training(with_zero, without, allowed, what);
    expect_state_shared_out(with_zero, without, level, plain.train.ema_decay > 0, shared_memory);
    if (each) each(with_zero, what);
  }
}

void expect_zero_matches_plain(const ZeroCase& c) {
  expect_zero_matches_plain(zero_config(c), c.tolerance);
}

TEST(Zero, AdamW) {
  expect_zero_matches_plain({OptimizerType::kAdamW});
}
TEST(Zero, SgdMomentum) {
  expect_zero_matches_plain({OptimizerType::kSgd});
}
TEST(Zero, AdamWClippedWithGradAccum) {
  expect_zero_matches_plain({OptimizerType::kAdamW, 3, 0.05});
}
TEST(Zero, SgdClippedWithGradAccum) {
  expect_zero_matches_plain({OptimizerType::kSgd, 2, 0.05});
}
// bf16 on the wire: both sum in bf16 (8 significant bits), and at 3 ranks the reduce-scatter may
// add in another order than the all-reduce: 2.2e-4 apart after 6 steps (exact at 2 ranks).
TEST(Zero, AdamWWithBf16OnTheWire) {
  expect_zero_matches_plain({OptimizerType::kAdamW, 1, 0, "", 0, WirePrecision::kBf16, 1e-3});
}
TEST(Zero, FrozenLayerAndMovingAverage) {
  expect_zero_matches_plain({OptimizerType::kAdamW, 1, 0, "0.*", 0.9});
}
TEST(Zero, FrozenLayer) {
  expect_zero_matches_plain({OptimizerType::kAdamW, 2, 0.05, "0.*"});
}
// ZeRO-3 averages each rank's shard of the parameters.
TEST(Zero, MovingAverageWithGradAccum) {
  expect_zero_matches_plain({OptimizerType::kAdamW, 2, 0.05, "", 0.8});
}

// ddp.prefetch = auto (the default) resolves by backend, as README's ddp.prefetch says: on with
// NCCL, whose own stream gathers beside the compute, off with MPI. ctest's ranks use MPI: the
// trainer built with the default does not prefetch, with ddp.prefetch = on it does.
TEST(Zero, PrefetchAutoIsOnWithNcclOffWithMpi) {
  Config config = zero_config({OptimizerType::kSgd});
  config.ddp.zero = 3;
  ASSERT_EQ(config.ddp.prefetch, Prefetch::kAuto) << "auto is no longer the default";
  const auto prefetches = [&config](Prefetch prefetch, Backend backend, torch::Device device) {
    Config c = config;
    c.ddp.prefetch = prefetch;
    c.ddp.backend = backend;
    return plan_sharding(c, 2, device).prefetch;
  };
  const torch::Device gpu(torch::kCUDA, 0), cpu(torch::kCPU);
  EXPECT_TRUE(prefetches(Prefetch::kAuto, Backend::kNccl, gpu));
  EXPECT_FALSE(prefetches(Prefetch::kAuto, Backend::kMpi, cpu));
  EXPECT_FALSE(prefetches(Prefetch::kAuto, Backend::kAuto, cpu));
  EXPECT_EQ(prefetches(Prefetch::kAuto, Backend::kAuto, gpu), nccl_compiled());
  EXPECT_TRUE(prefetches(Prefetch::kOn, Backend::kNccl, gpu));
  EXPECT_TRUE(prefetches(Prefetch::kOn, Backend::kMpi, cpu));
  EXPECT_FALSE(prefetches(Prefetch::kOff, Backend::kNccl, gpu));
  EXPECT_FALSE(prefetches(Prefetch::kOff, Backend::kMpi, cpu));

  config.train.steps = 2;
  const TrainedRun by_default = train(config, MPI_COMM_WORLD);
  EXPECT_EQ(by_default.facts.sharding.parameters_sharded(), world_size() > 1);
  EXPECT_FALSE(by_default.facts.sharding.prefetch) << "ddp.prefetch = auto prefetched with MPI";
  config.ddp.prefetch = Prefetch::kOn;
  EXPECT_TRUE(train(config, MPI_COMM_WORLD).facts.sharding.prefetch);
}

// A TorchScript model's units are the submodules its forward only calls (the generator's
// docstring says which); the rest stays whole in the root unit.
TEST(Zero, TorchScriptUnitsAreTheSubmodulesForwardOnlyCalls) {
  const std::string path = torchscript_blocks_test_model();
  ASSERT_FALSE(path.empty()) << "DDPTRAIN_TEST_TORCHSCRIPT_BLOCKS is not set (ctest sets it)";
  TorchScriptModel model(path);
  EXPECT_EQ(model.unit_prefixes(),
            (std::vector<std::string>{"embed.", "blocks.0.", "blocks.1.", "head."}));
  EXPECT_TRUE(model.conditional_parameters().empty()) << "no `if` or loop in its forward";
}
// A submodule called inside an `if` or a loop on the data is no unit: ranks with different batches
// would call it differently, and gather different units (make_torchscript_branches.py).
TEST(Zero, TorchScriptCallsUnderBranchesOrLoopsAreNoUnits) {
  const std::string path = torchscript_branches_test_model();
  ASSERT_FALSE(path.empty()) << "DDPTRAIN_TEST_TORCHSCRIPT_BRANCHES is not set (ctest sets it)";
  TorchScriptModel model(path);
  EXPECT_EQ(model.unit_prefixes(),
            (std::vector<std::string>{"embed.", "first.", "last.", "head."}));
  // Theirs may get no gradient on a rank: ZeRO-3 reduces them last (ddp/unit_plan.hpp).
  EXPECT_EQ(model.conditional_parameters(),
            (std::vector<std::string>{"branch.norm.weight", "branch.norm.bias", "branch.fc.weight",
                                      "branch.fc.bias", "looped.norm.weight", "looped.norm.bias",
                                      "looped.fc.weight", "looped.fc.bias"}));
}
// Trained through its units, each gathered while its call runs (again for each micro-step's
// backward): as plain data parallel. SGD: AdamW's first steps would magnify ZeRO-2's own rounding
// of micro-steps (expect_zero_matches_plain) past the tolerance on LibTorch 2.6 (2.5e-6).
TEST(Zero, TorchScriptModelByUnits) {
  ZeroCase c{OptimizerType::kSgd, 2, 0.05};
  Config config = zero_config(c);
  config.model.type = ModelType::kTorchScript;
  config.model.path = torchscript_blocks_test_model();
  ASSERT_FALSE(config.model.path.empty());
  use_small_buckets(config, 300, 600);
  expect_zero_matches_plain(config, kZeroTolerance, /*prefetch_off_too=*/true);
}

// The decks' models for 30 steps with 2 micro-steps each, and buckets of about an eighth of the
// model, so several borrow ZeRO-2's pool in a backward.
Config thirty_steps(Config config) {
  config.train.steps = 30;
  config.train.grad_accum = 2;
  config.train.global_batch = 24;
  config.log.every = 1;
  return config;
}

TEST(Zero, GptDeckThirtyStepsWithGradAccum) {
  Config gpt = thirty_steps(small_gpt());
  use_small_buckets(gpt, 2000, 4000);
  expect_zero_matches_plain(gpt, kZeroTolerance, /*prefetch_off_too=*/true);
}
TEST(Zero, CnnDeckThirtyStepsWithGradAccum) {
  Config cnn = thirty_steps(small_cnn());
  cnn.optim.momentum = 0.9;
  use_small_buckets(cnn, 100, 200);
  expect_zero_matches_plain(cnn, kZeroTolerance, /*prefetch_off_too=*/true);
}
// ZeRO-3 with each block's activations recomputed in backward: the recomputation runs inside the
// block's backward, after its parameters were gathered again.
TEST(Zero, Zero3WithActivationCheckpointing) {
  Config gpt = thirty_steps(small_gpt());
  gpt.model.activation_checkpointing = true;
  const TrainedRun plain = train(gpt, MPI_COMM_WORLD);
  gpt.ddp.zero = 3;
  const TrainedRun zero = train(gpt, MPI_COMM_WORLD);
  // Micro-steps summed over the ranks first, as ZeRO-2 does (expect_zero_matches_plain).
  expect_same_training(zero, plain, 2 * kZeroTolerance, "ZeRO-3 with activation checkpointing");
  EXPECT_EQ(zero.facts.sharding.parameters_sharded(), world_size() > 1);
}
// In bf16 the recomputation casts the block's weights again itself, and the forward's casts, which
// nothing saved, are not made again for backward (ddp/unit_casts.hpp): ZeRO-3's run with activation
// checkpointing is its run without. (Against plain data parallel, bf16's rounding of the weights
// magnifies ZeRO's other order of summing the micro-steps: the GPT deck's losses at 2 ranks, 30
// steps of 2 micro-steps, were 3.6e-5 apart for ZeRO-2 and ZeRO-3 alike.)
TEST(Zero, Zero3WithActivationCheckpointingInBf16) {
  Config gpt = thirty_steps(small_gpt());
  gpt.ddp.zero = 3;
  gpt.train.precision = Precision::kBf16;
  const TrainedRun kept = train(gpt, MPI_COMM_WORLD);
  gpt.model.activation_checkpointing = true;
  const TrainedRun recomputed = train(gpt, MPI_COMM_WORLD);
  expect_same_training(recomputed, kept, kZeroTolerance,
                       "ZeRO-3 in bf16 with activation checkpointing, against without");
}

// The deck's AdamW, with bf16 on the wire. The tolerance is what bf16 itself moves the run by
// (plain bf16 against plain fp32), once per rounding of a step's gradients: ZeRO-2 rounds each
// micro-step's sum to bf16 where plain data parallel and ZeRO-1 round the step's once (at 2 and
// 3 ranks ZeRO-2 ended 1.4 and 1.6 times as far from plain bf16 as that is from fp32). That move
// is bounded from both sides, so that a wire that rounds nothing, or wrecks the run, cannot set
// the tolerance; and each level's run must have moved from plain fp32 as well, so that a level
// whose wire stayed fp32 (within 2e-6 of plain fp32, GptDeckThirtyStepsWithGradAccum) fails.
TEST(Zero, GptDeckAdamWWithBf16OnTheWire) {
  // Measured with LibTorch 1.13: plain bf16 moved 9.6e-3 from fp32 at 2 ranks and 1.3e-2 at 3;
  // each ZeRO level 9.6e-3 to 2.0e-2.
  constexpr double kBf16MovesAtLeast = 1e-3;
  constexpr double kBf16MovesAtMost = 4e-2;
  Config gpt = thirty_steps(small_gpt());
  gpt.optim.type = OptimizerType::kAdamW;
  gpt.optim.lr = 0.003;
  use_small_buckets(gpt, 2000, 4000);
  const TrainedRun fp32 = train(gpt, MPI_COMM_WORLD);
  gpt.ddp.compress = WirePrecision::kBf16;
  const double bf16_moves = max_relative_difference(train(gpt, MPI_COMM_WORLD).params, fp32.params);
  std::cout << world_size() << " ranks: bf16 on the wire moves the run by " << bf16_moves << "\n";
  const bool wire = world_size() > 1;
  if (wire) {
    EXPECT_GT(bf16_moves, kBf16MovesAtLeast);
    EXPECT_LT(bf16_moves, kBf16MovesAtMost);
  } else {
    EXPECT_EQ(bf16_moves, 0) << "one rank has no wire";
  }
  const double roundings = static_cast<double>(gpt.train.grad_accum);
  const double tolerance =
      std::max(roundings * std::min(bf16_moves, kBf16MovesAtMost), kZeroTolerance);
  expect_zero_matches_plain(
      gpt, tolerance, false, [&](const TrainedRun& run, const std::string& what) {
        const double moved = max_relative_difference(run.params, fp32.params);
        std::cout << what << ": bf16 on the wire moved it by " << moved << " from plain fp32\n";
        if (wire) {
          EXPECT_GT(moved, kBf16MovesAtLeast) << what << ": bf16 on the wire changed nothing";
        } else {
          EXPECT_LT(moved, kZeroTolerance) << what << ": one rank has no wire";
        }
      });
}

// train.precision = bf16 (autocast) under ZeRO-1, 2 and 3 against plain data parallel in bf16, a
// few steps of the GPT and CNN decks: ZeRO-3 casts each gathered unit's weights itself
// (ddp/unit_casts.hpp), to the values autocast gives them without ZeRO, so the fp32 cases'
// tolerance holds (the runs were identical with LibTorch 1.13). bf16 itself moves each run from
// fp32 (measured with LibTorch 1.13: 4.8e-3 to 5.2e-3 for the GPT, 0.22 to 0.46 for the CNN), which
// each level's run must show: autocast at work under it.
TEST(Zero, DecksInBf16Precision) {
  constexpr double kBf16MovesAtLeast = 1e-3;
  for (Config config : {small_gpt(), small_cnn()}) {
    config.log.every = 1;
    use_small_buckets(config, 2000, 4000);
    const TrainedRun fp32 = train(config, MPI_COMM_WORLD);
    config.train.precision = Precision::kBf16;
    expect_zero_matches_plain(
        config, kZeroTolerance, false, [&](const TrainedRun& run, const std::string& what) {
          const double moved = max_relative_difference(run.params, fp32.params);
          std::cout << what << ": bf16 moved it by " << moved << " from plain fp32\n";
          EXPECT_GT(moved, kBf16MovesAtLeast) << what << ": bf16 changed nothing (no autocast)";
          EXPECT_EQ(run.facts.precision, Precision::kBf16) << what;
        });
  }
}

// ZeRO-2 keeps 1/N of the gradients and the two pooled buckets it reduces at a time, against the
// whole gradients without it. A GPT of 4 blocks, 64 wide (0.2M values), in buckets of 1000 floats
// or one parameter.
TEST(Zero, GradientsHeldShrinkWithZero2) {
  Config gpt = small_gpt();
  gpt.model.n_layer = 4;
  gpt.model.n_embd = 64;
  gpt.train.steps = 2;
  constexpr int64_t kCap = 1000;
  use_small_buckets(gpt, kCap, kCap);
  const TrainedRun plain = train(gpt, MPI_COMM_WORLD);
  gpt.ddp.zero = 2;
  const TrainedRun zero = train(gpt, MPI_COMM_WORLD);
  const double n = world_size();
  const double whole = static_cast<double>(plain.facts.gradient_bytes);
  EXPECT_EQ(plain.facts.gradient_bytes, plain.facts.bucketed_values * 4);
  if (world_size() == 1) {
    EXPECT_EQ(zero.facts.gradient_bytes, plain.facts.gradient_bytes);  // nothing to shard
    return;
  }
  // A bucket closes past the cap by at most its last parameter, and is padded to n blocks; a
  // pooled entry holds one such bucket and one block of it (where its sum lands).
  int64_t largest = 0;
  for (const auto& p : plain.params) largest = std::max(largest, p.numel());
  const double entry = (kCap + static_cast<double>(largest) + n) * (1 + 1 / n) * 4;
  const double shards = whole / n + 4 * static_cast<double>(plain.facts.buckets);
  EXPECT_LE(static_cast<double>(zero.facts.gradient_bytes), shards + 2 * entry);
  EXPECT_LT(static_cast<double>(zero.facts.gradient_bytes), 0.8 * whole);
}

}  // namespace
}  // namespace ddpt::testing
