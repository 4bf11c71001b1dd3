#include <gtest/gtest.h>

#include <set>

#include "data/distributed_sampler.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

SamplerSpec spec(int world, int rank, int64_t batch, int64_t accum) {
  SamplerSpec s;
  s.dataset_size = 1000;
  s.batch_size = batch;
  s.grad_accum = accum;
  s.world_size = world;
  s.rank = rank;
  s.seed = 11;
  return s;
}

// The set of rows all ranks see in one optimizer step.
std::vector<int64_t> global_rows(int world, int64_t batch, int64_t accum, int64_t step) {
  std::vector<int64_t> rows;
  for (int r = 0; r < world; ++r) {
    DistributedSampler sampler(spec(world, r, batch, accum));
    for (int64_t m = 0; m < accum; ++m) {
      const torch::Tensor idx = sampler.indices(step, m);
      rows.insert(rows.end(), idx.data_ptr<int64_t>(), idx.data_ptr<int64_t>() + idx.numel());
    }
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

TEST(DistributedSampler, RanksPartitionTheGlobalBatchWhateverTheRankCount) {
  for (int64_t step : {0, 3, 40}) {  // 40: second epoch (1000 / 24 = 41 steps per epoch)
    const auto one = global_rows(1, 24, 1, step);
    EXPECT_EQ(global_rows(2, 12, 1, step), one);
    EXPECT_EQ(global_rows(3, 8, 1, step), one);
    EXPECT_EQ(global_rows(3, 2, 4, step), one);  // micro-steps too
    EXPECT_EQ(std::set<int64_t>(one.begin(), one.end()).size(), one.size()) << "duplicates";
  }
}

TEST(DistributedSampler, EpochsAreDifferentPermutations) {
  DistributedSampler sampler(spec(1, 0, 10, 1));
  const torch::Tensor e0 = sampler.epoch_permutation(0);
  const torch::Tensor e1 = sampler.epoch_permutation(1);
  EXPECT_FALSE(torch::equal(e0, e1));
  EXPECT_TRUE(torch::equal(std::get<0>(e0.sort()), torch::arange(1000)));
  EXPECT_TRUE(torch::equal(e0, DistributedSampler(spec(4, 2, 5, 2)).epoch_permutation(0)));
}

TEST(DistributedSampler, StepsPerEpochDropTheIncompleteBatch) {
  EXPECT_EQ(DistributedSampler(spec(3, 0, 8, 2)).steps_per_epoch(), 1000 / 48);
  EXPECT_THROW(DistributedSampler(spec(4, 0, 300, 1)), ConfigError);
}

}  // namespace
}  // namespace ddpt
