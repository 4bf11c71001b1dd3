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
#include <mutex>
#include <unordered_map>

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

  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }
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
    int64_t bytes = 0;
    const CountingAllocator* owner = nullptr;
  };
  // Every counted block by its address. The DataPtr handed out has the address as its context
  // too, as LibTorch's raw_allocate() asserts (oneDNN's scratch memory, which bf16 products on
  // the CPU take, comes through it), so the block is found here by the address alone. Never
  // destroyed: a static tensor may free its block after the program's statics are gone.
  static std::mutex& blocks_mutex() {
    static auto* mutex = new std::mutex;
    return *mutex;
  }
  static std::unordered_map<void*, Block>& blocks() {
    static auto* blocks = new std::unordered_map<void*, Block>;
    return *blocks;
  }
  static void free_block(void* data) {
    Block block;
    {
      const std::lock_guard<std::mutex> lock(blocks_mutex());
      auto found = blocks().find(data);
      if (found == blocks().end()) return;  // not counted (allocated before install): left
      block = std::move(found->second);
      blocks().erase(found);
    }
    block.owner->live_ -= block.bytes;
  }  // block.inner frees the memory here
  c10::DataPtr counted(size_t n) const {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    if (data == nullptr) return inner;  // nothing allocated (0 bytes)
    const c10::Device device = inner.device();
    const auto bytes = static_cast<int64_t>(n);
    {
      const std::lock_guard<std::mutex> lock(blocks_mutex());
      blocks()[data] = Block{std::move(inner), bytes, this};
    }
    const int64_t now = live_ += bytes;
    int64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    return {data, data, &free_block, device};
  }
  c10::Allocator* inner_ = nullptr;
  mutable std::atomic<int64_t> live_{0};
  mutable std::atomic<int64_t> peak_{0};
};

}  // namespace ddpt::testing
