#include "data/batch_prefetcher.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

#include "util/error.hpp"

namespace ddpt {

BatchPrefetcher::BatchPrefetcher(const Dataset& data, const SamplerSpec& sampler,
                                 const PrefetchSpec& spec)
    : data_(data),
      sampler_(sampler),
      spec_(spec),
      accum_(sampler.grad_accum),
      next_step_(spec.first_step) {
  if (spec_.depth > 0 && spec_.first_step < spec_.end_step) {
    hdf5_shared_.emplace();
    thread_ = std::thread([this] { loop(); });
  }
}

BatchPrefetcher::~BatchPrefetcher() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  space_.notify_all();
  thread_.join();
}

Batch BatchPrefetcher::read(int64_t step, int64_t micro) {
  Batch batch = data_.get(sampler_.indices(step, micro));
  if (spec_.pin) {
    batch.inputs = batch.inputs.pin_memory();
    batch.targets = batch.targets.pin_memory();
  }
  return batch;
}

void BatchPrefetcher::loop() {
  // A new thread's OpenMP team size is the machine's core count, not train.threads (OpenMP keeps
  // it per thread): without this, a batch's conversion could run on every core of the node.
  at::init_num_threads();
  produce();
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
  }
  ready_.notify_all();
}

void BatchPrefetcher::produce() {
  for (int64_t step = spec_.first_step; step < spec_.end_step; ++step) {
    for (int64_t micro = 0; micro < accum_; ++micro) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        space_.wait(lock, [this] {
          return stopping_ || static_cast<int64_t>(slots_.size()) < spec_.depth;
        });
        if (stopping_) return;
      }
      Slot slot;
      try {
        slot.batch = read(step, micro);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = static_cast<bool>(slot.error);
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        slots_.push_back(std::move(slot));
      }
      ready_.notify_one();
      if (failed) return;  // next() rethrows it; nothing after it is asked for
    }
  }
}

Batch BatchPrefetcher::next(int64_t step, int64_t micro) {
  if (step != next_step_ || micro != next_micro_ || step >= spec_.end_step) {
    throw Error(fmt::format("internal error: batch of step {} micro-step {} asked for, but the "
                            "prefetcher holds step {} micro-step {} next (ending before step {})",
                            step + 1, micro, next_step_ + 1, next_micro_, spec_.end_step + 1),
                ExitCode::kInternal, Raised::kThisRank);
  }
  if (++next_micro_ == accum_) {
    next_micro_ = 0;
    ++next_step_;
  }
  if (!thread_.joinable()) return read(step, micro);
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return !slots_.empty() || ended_; });
    if (slots_.empty()) {  // only after the error of an earlier batch was rethrown
      throw Error(fmt::format("internal error: batch of step {} micro-step {} asked for after "
                              "the prefetch thread ended",
                              step + 1, micro),
                  ExitCode::kInternal, Raised::kThisRank);
    }
    slot = std::move(slots_.front());
    slots_.pop_front();
  }
  space_.notify_one();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.batch);
}

}  // namespace ddpt
