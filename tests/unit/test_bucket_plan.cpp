#include <gtest/gtest.h>

#include "config/ddp_defaults.hpp"
#include "ddp/bucket_plan.hpp"
#include "ddp/shard_plan.hpp"

namespace ddpt {
namespace {

std::vector<ParamInfo> floats(std::vector<int64_t> numels) {
  std::vector<ParamInfo> out;
  for (auto n : numels) out.push_back({n, 4, 6});
  return out;
}

TEST(BucketPlan, ReverseOrderWithSmallFirstBucket) {
  // 5 parameters of 100 floats (400 bytes); first cap 400 bytes, then 1000 bytes.
  const auto buckets = plan_buckets(floats({100, 100, 100, 100, 100}), 400, 1000);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].params, (std::vector<size_t>{4}));
  EXPECT_EQ(buckets[1].params, (std::vector<size_t>{3, 2, 1}));  // 1200 bytes >= 1000: closes
  EXPECT_EQ(buckets[2].params, (std::vector<size_t>{0}));
  EXPECT_EQ(buckets[1].offsets, (std::vector<int64_t>{0, 100, 200}));
  EXPECT_EQ(buckets[1].numel, 300);
}

TEST(BucketPlan, ParameterLargerThanTheCapClosesItsBucket) {
  // As in PyTorch's reducer, a bucket closes once it reaches the cap, never splits a parameter.
  const auto buckets = plan_buckets(floats({10, 1'000'000, 10, 10}), 100, 100);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].params, (std::vector<size_t>{3, 2, 1}));
  EXPECT_EQ(buckets[1].params, (std::vector<size_t>{0}));
}

// ZeRO-2's plan: the large parameter closes the bucket before it and has its own; the next bucket
// starts after it. The first bucket's cap (100 bytes) applies to the first bucket only.
TEST(BucketPlan, LargeParametersAloneWhenAsked) {
  const auto buckets = plan_buckets(floats({10, 10, 1'000'000, 10, 10}), 100, 400, true);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].params, (std::vector<size_t>{4, 3}));  // 80 bytes, then the large one
  EXPECT_EQ(buckets[1].params, (std::vector<size_t>{2}));
  EXPECT_EQ(buckets[2].params, (std::vector<size_t>{1, 0}));
}

TEST(BucketPlan, EveryParameterExactlyOnce) {
  std::vector<int64_t> numels;
  for (int i = 1; i <= 50; ++i) numels.push_back(i * 37 % 1000 + 1);
  const auto buckets =
      plan_buckets(floats(numels), mib_to_bytes(1.0 / 1024), mib_to_bytes(4.0 / 1024));
  std::vector<int> seen(numels.size(), 0);
  for (const auto& b : buckets) {
    int64_t expected_offset = 0;
    for (size_t k = 0; k < b.params.size(); ++k) {
      ++seen[b.params[k]];
      EXPECT_EQ(b.offsets[k], expected_offset);
      expected_offset += numels[b.params[k]];
    }
    EXPECT_EQ(b.numel, expected_offset);
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(BucketPlan, DtypesNeverShareABucket) {
  std::vector<ParamInfo> params{{10, 4, 6}, {10, 8, 7}, {10, 4, 6}, {10, 8, 7}};
  const auto buckets = plan_buckets(params, 1 << 20, 1 << 20);
  ASSERT_EQ(buckets.size(), 2u);
  for (const auto& b : buckets) {
    for (size_t i : b.params) EXPECT_EQ(params[i].dtype_key, params[b.params[0]].dtype_key);
  }
}

TEST(BucketPlan, MiBConversion) {
  EXPECT_EQ(mib_to_bytes(25.0), 25 * 1024 * 1024);
}

TEST(BucketPlan, DefaultCapsArePyTorchDdps) {
  EXPECT_EQ(mib_to_bytes(kDefaultBucketMiB), 25 * 1024 * 1024);
  EXPECT_EQ(mib_to_bytes(kDefaultFirstBucketMiB), 1024 * 1024);
}

}  // namespace
}  // namespace ddpt

namespace ddpt {
namespace {

// Every element of every bucket is owned by exactly one rank, through one piece.
TEST(ShardPlan, EveryElementHasOneOwnerAndPiecesStayInsideTheirParameter) {
  const std::vector<int64_t> numels{7, 100, 3, 50, 1};
  const auto buckets = plan_buckets(floats(numels), 40, 400);
  for (int world = 1; world <= 5; ++world) {
    std::vector<std::vector<int>> owners;  // by parameter, by element
    for (int64_t n : numels) owners.emplace_back(n, 0);
    for (int rank = 0; rank < world; ++rank) {
      const auto shards = plan_shards(buckets, numels, world, rank);
      ASSERT_EQ(shards.size(), buckets.size());
      for (size_t b = 0; b < buckets.size(); ++b) {
        EXPECT_EQ(shards[b].block, (buckets[b].numel + world - 1) / world);
        for (const ShardPiece& piece : shards[b].pieces) {
          ASSERT_GT(piece.numel, 0);
          ASSERT_LE(piece.param_offset + piece.numel, numels[piece.param]);
          ASSERT_LE(piece.block_offset + piece.numel, shards[b].block);
          // The piece is where the bucket puts these elements, inside this rank's block.
          size_t k = 0;
          while (buckets[b].params[k] != piece.param) ++k;
          EXPECT_EQ(buckets[b].offsets[k] + piece.param_offset,
                    shards[b].block * rank + piece.block_offset);
          for (int64_t e = 0; e < piece.numel; ++e) ++owners[piece.param][piece.param_offset + e];
        }
      }
    }
    for (size_t p = 0; p < numels.size(); ++p) {
      for (int64_t e = 0; e < numels[p]; ++e) {
        ASSERT_EQ(owners[p][e], 1) << world << " ranks: parameter " << p << " element " << e;
      }
    }
  }
}

TEST(ShardPlan, RanksPastTheEndOfASmallBucketOwnNothing) {
  // One bucket of 5 values over 4 ranks: blocks of 2, rank 3's block is all padding.
  const std::vector<int64_t> numels{5};
  const auto buckets = plan_buckets(floats(numels), 1000, 1000);
  EXPECT_EQ(plan_shards(buckets, numels, 4, 2)[0].pieces.size(), 1u);
  EXPECT_TRUE(plan_shards(buckets, numels, 4, 3)[0].pieces.empty());
}

}  // namespace
}  // namespace ddpt
