// ZeRO-3's units (ddp/unit_plan.hpp) and the memory they come and go in
// (util/releasable_storage.hpp).
#include <gtest/gtest.h>

#include "ddp/unit_plan.hpp"
#include "util/releasable_storage.hpp"

namespace ddpt {
namespace {

// A GPT's parameters in registration order: embeddings, two blocks, the final norm.
const std::vector<std::string> kNames{"wte.weight",     "wpe.weight",      "h.0.attn.weight",
                                      "h.0.mlp.weight", "h.1.attn.weight", "h.1.mlp.weight",
                                      "ln_f.weight",    "ln_f.bias"};
const std::vector<int64_t> kNumels{100, 20, 30, 40, 31, 41, 5, 5};
constexpr int64_t kNoneLarge = 1000;  // no parameter is a bucket of its own for its size

TEST(UnitPlan, BlocksAreUnitsAndTheRestIsTheRoot) {
  const UnitPlan plan = plan_units(kNames, kNumels, {"h.0.", "h.1."}, kNoneLarge);
  ASSERT_EQ(plan.units, 3u);
  EXPECT_EQ(plan.unit_of_param, (std::vector<size_t>{2, 2, 0, 0, 1, 1, 2, 2}));
}

TEST(UnitPlan, BucketsInTheOrderBackwardFinishesThem) {
  const UnitPlan plan = plan_units(kNames, kNumels, {"h.0.", "h.1."}, kNoneLarge);
  // The final norm's parameters one by one, block 1, block 0, the embeddings one by one.
  std::vector<std::vector<size_t>> params;
  for (const BucketSpec& b : plan.buckets) params.push_back(b.params);
  EXPECT_EQ(params, (std::vector<std::vector<size_t>>{{7}, {6}, {5, 4}, {3, 2}, {1}, {0}}));
  EXPECT_EQ(plan.unit_of_bucket, (std::vector<size_t>{2, 2, 1, 0, 2, 2}));
  EXPECT_EQ(plan.buckets_of_unit[0], (std::vector<size_t>{3}));
  EXPECT_EQ(plan.buckets_of_unit[1], (std::vector<size_t>{2}));
  EXPECT_EQ(plan.buckets_of_unit[2], (std::vector<size_t>{0, 1, 4, 5}));
  EXPECT_EQ(plan.buckets[2].offsets, (std::vector<int64_t>{0, 41}));
  EXPECT_EQ(plan.buckets[2].numel, 72);
}

// A block's parameters of at least `large` elements are buckets of their own (which borrow no
// pooled buffer), its others one bucket after them.
TEST(UnitPlan, LargeParametersOfABlockAreBucketsOfTheirOwn) {
  const UnitPlan plan = plan_units(kNames, kNumels, {"h.0.", "h.1."}, 40);
  std::vector<std::vector<size_t>> params;
  for (const BucketSpec& b : plan.buckets) params.push_back(b.params);
  EXPECT_EQ(params, (std::vector<std::vector<size_t>>{{7}, {6}, {5}, {4}, {3}, {2}, {1}, {0}}));
  EXPECT_EQ(plan.buckets_of_unit[1], (std::vector<size_t>{2, 3}));
  EXPECT_EQ(plan.buckets_of_unit[0], (std::vector<size_t>{4, 5}));
}

// Root parameters that forward may use on some ranks only (inside an `if` or a loop on the data)
// come after every other bucket, from either side of the blocks: a rank that got no gradient for
// one launches it only at the backward's end, and must not hold back a block's bucket meanwhile.
TEST(UnitPlan, RootParametersUsedOnSomeRanksOnlyComeLast) {
  const UnitPlan plan =
      plan_units(kNames, kNumels, {"h.0.", "h.1."}, kNoneLarge, {"wpe.weight", "ln_f.bias"});
  std::vector<std::vector<size_t>> params;
  for (const BucketSpec& b : plan.buckets) params.push_back(b.params);
  EXPECT_EQ(params, (std::vector<std::vector<size_t>>{{6}, {5, 4}, {3, 2}, {0}, {7}, {1}}));
  EXPECT_EQ(plan.unit_of_bucket, (std::vector<size_t>{2, 1, 0, 2, 2, 2}));
  EXPECT_EQ(plan.buckets_of_unit[2], (std::vector<size_t>{0, 3, 4, 5}));
}

TEST(UnitPlan, ABlockWithoutTrainableParametersHasNoBucket) {
  // h.0's parameters frozen: not among the trainable ones the plan is made of.
  const UnitPlan plan =
      plan_units({"wte.weight", "h.1.w", "ln_f.weight"}, {10, 20, 5}, {"h.0.", "h.1."}, kNoneLarge);
  EXPECT_TRUE(plan.buckets_of_unit[0].empty());
  EXPECT_EQ(plan.buckets_of_unit[1], (std::vector<size_t>{1}));
  EXPECT_EQ(plan.buckets.size(), 3u);
}

TEST(UnitPlan, PrefixesMatchWholeNamesOnly) {
  // "1." is not a prefix of "10.weight": the MLP's layers 1 and 10 are different units.
  const UnitPlan plan = plan_units({"1.weight", "10.weight"}, {3, 3}, {"1.", "10."}, kNoneLarge);
  EXPECT_EQ(plan.unit_of_param, (std::vector<size_t>{0, 1}));
}

TEST(ReleasableStorage, ViewsSeeTheMemoryRestoredAndWrittenAgain) {
  const torch::Tensor flat = torch::arange(12, torch::kFloat);
  torch::Tensor param = torch::empty({0});
  param.set_data(flat.narrow(0, 4, 6).view({2, 3}));
  const auto version = param._version();
  ASSERT_TRUE(storage_held(flat));
  release_storage(flat);
  EXPECT_FALSE(storage_held(flat));
  EXPECT_EQ(flat.storage().nbytes(), 0u);
  restore_storage(flat);
  EXPECT_TRUE(storage_held(flat));
  flat.copy_(torch::arange(12, torch::kFloat) * 2);
  EXPECT_TRUE(torch::equal(param, (torch::arange(4, 10, torch::kFloat) * 2).view({2, 3})));
  EXPECT_EQ(param._version(), version) << "what autograd saved would read as modified";
}

// ZeRO-3's gathered units on the host: a released block comes back, whole, for the next restore
// it is large enough for (the smallest such), so gathering unit after unit reuses one block
// instead of taking new memory each time; a larger request gets memory of its own.
TEST(ReleasableStorage, APoolGivesAReleasedBlockToTheNextRestore) {
  StoragePool pool;
  const torch::Tensor small = torch::zeros({1000});
  const torch::Tensor large = torch::zeros({4000});
  const torch::Tensor largest = torch::zeros({8000});
  const void* small_block = small.data_ptr();
  const void* large_block = large.data_ptr();
  pool.release(large);
  pool.release(small);
  EXPECT_FALSE(storage_held(large));
  const torch::Tensor next = torch::zeros({900});
  release_storage(next);  // a unit's buffer between gathers
  pool.restore(next);
  EXPECT_EQ(next.data_ptr(), small_block) << "the smallest kept block that is large enough";
  next.fill_(3);  // the whole length is usable
  EXPECT_EQ(next.sum().item<float>(), 2700);
  const void* largest_block = largest.data_ptr();
  pool.restore(largest);  // held: restoring it again changes nothing
  EXPECT_EQ(largest.data_ptr(), largest_block);
  pool.release(largest);
  const torch::Tensor bigger = torch::zeros({5000});
  release_storage(bigger);
  pool.restore(bigger);
  EXPECT_NE(bigger.data_ptr(), large_block) << "too small for it";
  EXPECT_EQ(bigger.data_ptr(), largest_block) << "the released block that fits, used again";
  pool.restore(large);
  EXPECT_EQ(large.data_ptr(), large_block) << "its own block, kept";
}

}  // namespace
}  // namespace ddpt
