#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/batch_size.hpp"
#include "config/config.hpp"
#include "run/batch_size_search.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// The search against a device on which exactly `capacity` samples fit; every size tried is
// checked to be in [1, limit] and tried once.
BatchSizeTrials search(int64_t capacity, int64_t limit) {
  std::vector<int64_t> seen;
  BatchSizeTrials trials = search_largest_batch(limit, [&](int64_t batch) {
    EXPECT_GE(batch, 1);
    EXPECT_LE(batch, limit);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), batch), 0) << batch << " tried twice";
    seen.push_back(batch);
    return batch <= capacity;
  });
  EXPECT_EQ(trials.trials.size(), seen.size());
  return trials;
}

TEST(BatchSizeSearch, FindsTheLargestSizeThatFits) {
  for (int64_t capacity = 0; capacity <= 300; ++capacity) {
    const BatchSizeTrials trials = search(capacity, 1000);
    EXPECT_EQ(trials.largest, capacity);
    // Doubling, then halving the gap: about 2 log2(capacity) trials.
    EXPECT_LE(static_cast<double>(trials.trials.size()),
              2 * std::ceil(std::log2(static_cast<double>(capacity) + 1)) + 2)
        << "capacity " << capacity;
  }
}

TEST(BatchSizeSearch, StopsAtTheLimit) {
  for (int64_t limit : {1, 2, 5, 64, 100}) {
    const BatchSizeTrials trials = search(/*capacity=*/1 << 20, limit);
    EXPECT_EQ(trials.largest, limit);
    EXPECT_EQ(trials.trials.back().batch, limit);
  }
  EXPECT_EQ(search(/*capacity=*/99, /*limit=*/100).largest, 99);
  EXPECT_EQ(search(/*capacity=*/100, /*limit=*/100).largest, 100);
}

TEST(BatchSizeSearch, TextListsTheTrialsAndMarksFailures) {
  EXPECT_EQ(search(11, 1000).text(), "11 (tried 1 2 4 8 16x 12x 10 11; x: did not fit)");
  EXPECT_EQ(search(0, 1000).text(), "0 (tried 1x; x: did not fit)");
  EXPECT_EQ(search(50, 4).text(), "4 (tried 1 2 4; 4 is the most auto tries)");
}

TEST(BatchSizeSearch, AnUnresolvedAutoIsNotABatchSize) {
  Config config;
  config.train.batch_size_auto = true;
  config.train.batch_size = 0;
  EXPECT_THROW(per_rank_batch(config.train, 2), std::logic_error);
  // eval and predict take the training batch when eval.batch_size is 0: not an unresolved auto.
  EXPECT_THROW(eval_batch_size(config.eval, config.train, 2), ConfigError);
  config.eval.batch_size = 5;
  EXPECT_EQ(eval_batch_size(config.eval, config.train, 2), 5);
  config.train.batch_size = 48;  // found by train
  EXPECT_EQ(per_rank_batch(config.train, 2), 48);
}

}  // namespace
}  // namespace ddpt
