// What ZeRO-3 (ddp.zero = 3) gathers and holds, counted: the banner's figures for its units (the
// largest block's unit, whole, and the root unit), and under train.precision = bf16 the weights'
// casts, which live as their unit does (design.md, ZeRO-3) instead of the whole model's staying
// from the forward to the backward. Counted through LibTorch's CPU allocator (allocations, not
// timings). ctest runs it at 1, 2 and 3 ranks; on one rank nothing is sharded.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "comm/host_group.hpp"
#include "comm/mpi_comm.hpp"
#include "optim/distributed_optimizer.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "step/trainer.hpp"
#include "support/counting_allocator.hpp"
#include "support/training_fixture.hpp"

namespace ddpt::testing {
namespace {

// A model and its trainer on MPI_COMM_WORLD, as train() builds them (collective).
struct Built {
  explicit Built(const Config& c)
      : config(c),
        comm(MPI_COMM_WORLD),
        data((torch::manual_seed(static_cast<uint64_t>(c.run.seed)),
              make_datasets(c.data, c.run.seed))),
        sharding(plan_sharding(c, comm.size(), comm.device())),
        model(make_model(c.model, data.train->info(), sharding.initial_values())),
        trainer(trainer_options(config, comm.size()), sharding, comm, *model, *data.train) {}
  Config config;
  MpiComm comm;
  DataSplits data;
  ShardingPlan sharding;
  std::unique_ptr<Model> model;
  Trainer trainer;
};

// The parameters' bytes by unit: each block's (the model's unit prefixes, in order), then the
// root's (every parameter in no block).
std::vector<int64_t> unit_bytes(Model& model) {
  const std::vector<std::string> prefixes = model.unit_prefixes();
  std::vector<int64_t> bytes(prefixes.size() + 1, 0);
  for (const auto& p : model.named_parameters()) {
    size_t unit = prefixes.size();
    for (size_t u = 0; u < prefixes.size(); ++u) {
      if (p.name.rfind(prefixes[u], 0) == 0) {
        unit = u;
        break;
      }
    }
    bytes[unit] += p.tensor.numel() * static_cast<int64_t>(p.tensor.element_size());
  }
  return bytes;
}

// The banner's "each block's unit, up to X" is a block's unit whole (all of its buckets), and its
// root unit the parameters of no block: with buckets smaller than a block (here 2000 and 4000
// floats against blocks of 12.7K values), the largest bucket would be a fraction of a block.
TEST(ZeroUnits, FactsCountWholeUnitsAndTheRoot) {
  Config gpt = small_gpt();
  gpt.ddp.zero = 3;
  gpt.ddp.first_bucket_mb = 2000 * 4 / 1048576.0;
  gpt.ddp.bucket_mb = 4000 * 4 / 1048576.0;
  Built built(gpt);
  const TrainerFacts facts = built.trainer.facts();
  ASSERT_EQ(facts.sharding.parameters_sharded(), world_size() > 1);
  if (!facts.sharding.parameters_sharded()) return;  // one rank: nothing to gather
  const std::vector<int64_t> bytes = unit_bytes(*built.model);
  const int64_t largest_block = *std::max_element(bytes.begin(), bytes.end() - 1);
  const int64_t root = bytes.back();
  // Padding: under world size floats per bucket; a block here is at most 4 buckets, the root
  // one per parameter (wte, wpe, ln_f's two).
  const int64_t pad = 4 * world_size();
  EXPECT_GE(facts.largest_unit_bytes, largest_block);
  EXPECT_LT(facts.largest_unit_bytes, largest_block + 4 * pad);
  EXPECT_GE(facts.root_unit_bytes, root);
  EXPECT_LT(facts.root_unit_bytes, root + 4 * pad);
  std::cout << world_size() << " ranks: largest unit " << facts.largest_unit_bytes << " B (block "
            << largest_block << "), root " << facts.root_unit_bytes << " B (" << root << ")\n";
}

// The most bytes LibTorch's CPU allocator held at once during 2 training steps, beyond what it
// held before them (the first makes what lasts: gradient shards and buckets, the optimizer's
// state, memory kept for the next gather). Everything from the model's build on is allocated
// through the count.
int64_t step_peak(Config config) {
  static CountingAllocator counting;  // outlives the tensors it allocates
  config.train.steps = 2;
  counting.install();
  int64_t peak = 0;
  {
    MpiComm comm(MPI_COMM_WORLD);
    HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
    torch::manual_seed(static_cast<uint64_t>(config.run.seed));
    const DataSplits data = make_datasets(config.data, config.run.seed);
    const ShardingPlan sharding = plan_sharding(config, comm.size(), comm.device());
    auto model = make_model(config.model, data.train->info(), sharding.initial_values());
    TrainingRun training(run_options(config, comm.size()),
                         RunParts{comm, sharding, group, *model, *data.train});
    DiscardedOutput output;
    const int64_t before = counting.live();
    counting.reset_peak();
    training.run(output);
    peak = counting.peak() - before;
  }
  counting.uninstall();
  return peak;
}

// 12 blocks of width 128 (the weights' bf16 casts 4.8 MB together, 0.4 MB a block), one window of
// 8 tokens per rank, whose activations take less than the casts. Without ZeRO, autocast keeps
// each weight's cast from its first use to the end of the forward, and what the matrix products
// saved keeps it to its backward: the bf16 step's peak holds every block's cast more than the
// fp32 step's (the control: the count sees them). Under ZeRO-3 a unit's casts go with the unit:
// at most those of the units gathered at once (and the memory kept for the next), not the model's.
TEST(ZeroUnits, Bf16CastsLiveWithTheirUnit) {
  Config gpt = small_gpt();
  gpt.model.n_layer = 12;
  gpt.model.n_embd = 128;
  gpt.data.block = 8;
  gpt.train.global_batch = world_size();
  Config plain_bf16 = gpt;
  plain_bf16.train.precision = Precision::kBf16;
  const int64_t plain_extra = step_peak(plain_bf16) - step_peak(gpt);
  int64_t block_casts = 0;  // bytes of every block's weights in bf16
  {
    const auto model = make_model(gpt.model, make_datasets(gpt.data, gpt.run.seed).train->info());
    const std::vector<int64_t> bytes = unit_bytes(*model);
    for (size_t u = 0; u + 1 < bytes.size(); ++u) block_casts += bytes[u] / 2;
  }
  std::cout << world_size() << " ranks: bf16 casts of the blocks " << block_casts
            << " B; plain data parallel: bf16 step's peak " << plain_extra << " B above fp32's\n";
  EXPECT_GT(plain_extra, block_casts * 3 / 4) << "the count does not see autocast's casts";
  if (world_size() == 1) return;  // ZeRO-3 shards nothing on one rank
  // The units gathered into node-shared memory (ctest's ranks share a node); the casts are each
  // rank's own either way.
  Config zero = gpt;
  zero.ddp.zero = 3;
  Config zero_bf16 = zero;
  zero_bf16.train.precision = Precision::kBf16;
  const int64_t fp32 = step_peak(zero);
  const int64_t extra = step_peak(zero_bf16) - fp32;
  std::cout << world_size() << " ranks, ZeRO-3: fp32 step's peak " << fp32 << " B, bf16's " << extra
            << " B above it\n";
  EXPECT_GT(fp32, 0);
  EXPECT_LT(extra, block_casts / 2)
      << "ZeRO-3 under bf16 holds the casts of more than half of the blocks at once";
}

}  // namespace
}  // namespace ddpt::testing
