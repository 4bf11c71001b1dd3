#include <gtest/gtest.h>

#include "config/batch_size.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

TEST(GlobalBatch, SplitsOverRanksAndMicroSteps) {
  TrainConfig train;
  train.batch_size = 7;
  EXPECT_EQ(per_rank_batch(train, 4), 7);  // global_batch unset: batch_size as given
  train.global_batch = 48;
  EXPECT_EQ(per_rank_batch(train, 2), 24);
  EXPECT_EQ(per_rank_batch(train, 3), 16);
  train.grad_accum = 4;
  EXPECT_EQ(per_rank_batch(train, 3), 4);
  EXPECT_THROW(per_rank_batch(train, 5), ConfigError);  // 48 / 20 is not whole
}

}  // namespace
}  // namespace ddpt
