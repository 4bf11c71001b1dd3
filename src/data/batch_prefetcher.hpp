// data.prefetch: the next batches read while the current step computes.
//
// A thread of its own walks the training loop's sequence of (step, micro-step) pairs with its own
// copy of the sampler and keeps up to `depth` batches ready, in order. They are the rows the loop
// would read itself, so nothing a run computes depends on data.prefetch, bit for bit. On a CUDA
// device the thread also pins each batch (torch's caching host allocator), so the host-to-device
// copy the loop starts is an asynchronous DMA. With depth 0 there is no thread: next() reads the
// batch itself, and the time it takes is the data wait.
//
// An error reading a batch (a damaged data file) is rethrown by next() for that batch: at the step
// that would have read it without prefetching. HDF5 reads take the HDF5 lock
// (h5/h5_lock.hpp) inside the dataset; while the thread exists HDF5 counts as shared, so a
// training-thread HDF5 call without the lock aborts instead of corrupting HDF5's global state.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "data/dataset.hpp"
#include "data/distributed_sampler.hpp"
#include "h5/h5_lock.hpp"

namespace ddpt {

struct PrefetchSpec {
  int64_t first_step = 0;  // 0-based global steps [first_step, end_step), all micro-steps of each
  int64_t end_step = 0;
  int64_t depth = 1;  // batches read ahead; 0: none, next() reads
  bool pin = false;   // pin each batch in host memory (for a CUDA device)
};

class BatchPrefetcher {
 public:
  // Starts reading (depth > 0). `data` must outlive this.
  BatchPrefetcher(const Dataset& data, const SamplerSpec& sampler, const PrefetchSpec& spec);
  // Stops the thread after the read in progress; batches read ahead are dropped.
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The batch of micro-step `micro` of step `step`, which must be the next in the sequence;
  // waits for it when it is not read yet, and rethrows the error of its read.
  Batch next(int64_t step, int64_t micro);

 private:
  struct Slot {
    Batch batch;
    std::exception_ptr error;
  };
  Batch read(int64_t step, int64_t micro);
  void loop();     // the thread: produce(), then ended_
  void produce();  // reads the sequence into slots_ until its end, an error, or a stop

  const Dataset& data_;
  DistributedSampler sampler_;  // the thread's own: DistributedSampler caches an epoch's order
  PrefetchSpec spec_;
  int64_t accum_ = 1;
  int64_t next_step_ = 0;  // what next() must be asked for
  int64_t next_micro_ = 0;

  std::mutex mutex_;
  std::condition_variable ready_;  // a slot was filled, or the thread ended
  std::condition_variable space_;  // a slot was taken, or stop was asked
  std::deque<Slot> slots_;
  bool stopping_ = false;
  bool ended_ = false;  // the thread returned (the end of the sequence, an error, or a stop)
  std::optional<Hdf5SharedScope> hdf5_shared_;  // while the thread exists
  std::thread thread_;                          // last: started after the members it uses exist
};

}  // namespace ddpt
