// Counts what LibTorch's CPU allocator hands out while a CountingAllocator is installed: the bytes
// live now and their peak. For tests of how much memory a construction holds at once. Install it
// with `install()`; the object must outlive every tensor allocated through it (a static), since
// a tensor's storage keeps its allocator to allocate again.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace ddpt::testing {

class CountingAllocator final : public c10::Allocator {
 public:
  // From now on every CPU allocation goes through this object, counted; reset() zeroes the peak.
  void install() {
    inner_ = c10::GetCPUAllocator();
    c10::SetCPUAllocator(this, kPriority);
  }
  void uninstall() { c10::SetCPUAllocator(inner_, kPriority); }
  void reset_peak() { peak_ = live_.load(); }
  int64_t peak() const { return peak_.load(); }
  int64_t live() const { return live_.load(); }

#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) override {
    return counted(n);
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override {
    return counted(n);
  }
#endif

 private:
  static constexpr uint8_t kPriority = 200;  // above LibTorch's default allocator's
  struct Block {
    c10::DataPtr inner;
    int64_t bytes;
    const CountingAllocator* owner;
  };
  static void free_block(void* context) {
    auto* block = static_cast<Block*>(context);
    block->owner->live_ -= block->bytes;
    delete block;  // frees the inner memory
  }
  c10::DataPtr counted(size_t n) const {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    const c10::Device device = inner.device();
    auto* block = new Block{std::move(inner), static_cast<int64_t>(n), this};
    const int64_t now = live_ += block->bytes;
    int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    return {data, block, &free_block, device};
  }
  c10::Allocator* inner_ = nullptr;
  mutable std::atomic<int64_t> live_{0};
  mutable std::atomic<int64_t> peak_{0};
};

}  // namespace ddpt::testing
