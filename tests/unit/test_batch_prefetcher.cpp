#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "data/batch_prefetcher.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Row i holds the value i; reading row `failing_row` (if any) is a DataError, as a damaged file's
// read is. Counts the reads, which may come from the prefetch thread.
class IndexRows final : public Dataset {
 public:
  explicit IndexRows(int64_t rows, int64_t failing_row = -1)
      : rows_(rows), failing_row_(failing_row) {}
  int64_t size() const override { return rows_; }
  Batch get(const torch::Tensor& indices) const override {
    ++reads_;
    if (failing_row_ >= 0 && (indices == failing_row_).any().item<bool>()) {
      throw DataError("row " + std::to_string(failing_row_) + " is damaged", Raised::kThisRank);
    }
    return {indices.to(torch::kFloat).unsqueeze(1), indices.clone()};
  }
  DatasetInfo info() const override { return {}; }
  std::string describe() const override { return "index rows"; }
  int64_t reads() const { return reads_.load(); }

 private:
  int64_t rows_;
  int64_t failing_row_;
  mutable std::atomic<int64_t> reads_{0};
};

SamplerSpec sampler_spec(int64_t rows) {
  SamplerSpec spec;
  spec.dataset_size = rows;
  spec.batch_size = 4;
  spec.grad_accum = 2;
  spec.world_size = 2;
  spec.rank = 1;
  spec.seed = 7;
  return spec;
}

PrefetchSpec prefetch_spec(int64_t first, int64_t end, int64_t depth) {
  PrefetchSpec spec;
  spec.first_step = first;
  spec.end_step = end;
  spec.depth = depth;
  return spec;
}

TEST(BatchPrefetcher, GivesTheSamplersRowsInOrderAtEveryDepth) {
  const IndexRows data(100);  // 16 rows per step: 6 steps per epoch, so steps 4..13 cross two
  for (const int64_t depth : {0, 1, 3}) {
    BatchPrefetcher batches(data, sampler_spec(100), prefetch_spec(4, 14, depth));
    DistributedSampler reference(sampler_spec(100));
    for (int64_t step = 4; step < 14; ++step) {
      for (int64_t micro = 0; micro < 2; ++micro) {
        const Batch batch = batches.next(step, micro);
        const torch::Tensor expected = reference.indices(step, micro);
        ASSERT_TRUE(torch::equal(batch.targets, expected))
            << "depth " << depth << " step " << step << " micro " << micro;
        ASSERT_TRUE(torch::equal(batch.inputs, expected.to(torch::kFloat).unsqueeze(1)));
      }
    }
  }
}

TEST(BatchPrefetcher, ReadsNoFurtherAheadThanItsDepth) {
  const IndexRows data(100);
  BatchPrefetcher batches(data, sampler_spec(100), prefetch_spec(0, 5, 2));
  batches.next(0, 0);
  // One batch taken, two ready: the thread then waits for room. Give it time to overreach.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(data.reads(), 3);
  batches.next(0, 1);
  batches.next(1, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(data.reads(), 5);
}

TEST(BatchPrefetcher, ADamagedBatchFailsAtItsOwnStepNotEarlier) {
  // A row of step 3's second micro-step is unreadable. Rows do not repeat within an epoch (6 steps
  // here), so no earlier batch holds it.
  DistributedSampler sampler(sampler_spec(100));
  const int64_t bad_row = sampler.indices(3, 1)[0].item<int64_t>();
  for (const int64_t depth : {0, 4}) {
    const IndexRows data(100, bad_row);
    BatchPrefetcher batches(data, sampler_spec(100), prefetch_spec(0, 6, depth));
    for (int64_t step = 0; step < 3; ++step) {
      for (int64_t micro = 0; micro < 2; ++micro) {
        EXPECT_NO_THROW(batches.next(step, micro)) << "depth " << depth << " step " << step;
      }
    }
    EXPECT_NO_THROW(batches.next(3, 0)) << "depth " << depth;
    EXPECT_THROW(batches.next(3, 1), DataError) << "depth " << depth;
  }
  // The thread stops at the error: asking on is an internal error, not a wait for ever.
  const IndexRows data(100, bad_row);
  BatchPrefetcher batches(data, sampler_spec(100), prefetch_spec(0, 6, 4));
  for (int64_t step = 0; step < 3; ++step) {
    batches.next(step, 0);
    batches.next(step, 1);
  }
  batches.next(3, 0);
  EXPECT_THROW(batches.next(3, 1), DataError);
  try {
    batches.next(4, 0);
    FAIL() << "no error after the thread ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
  }
}

TEST(BatchPrefetcher, RefusesABatchOutOfSequence) {
  const IndexRows data(100);
  BatchPrefetcher batches(data, sampler_spec(100), prefetch_spec(2, 4, 1));
  EXPECT_THROW(batches.next(2, 1), Error);  // micro-step 0 comes first
  BatchPrefetcher ended(data, sampler_spec(100), prefetch_spec(2, 3, 1));
  ended.next(2, 0);
  ended.next(2, 1);
  try {
    ended.next(3, 0);  // past the end
    FAIL() << "no error past the last step";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
  }
}

TEST(BatchPrefetcher, StopsWhileItsThreadWaitsForRoom) {
  const IndexRows data(100);
  {
    BatchPrefetcher batches(data, sampler_spec(100), prefetch_spec(0, 1000, 2));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // the destructor returns (the thread waits for room, and is told to stop)
  EXPECT_LE(data.reads(), 2);
}

}  // namespace
}  // namespace ddpt
