// tune_process()'s malloc settings: memory freed by one step is reused by the next, on the main
// thread and on others (the communication thread's reduction buffers), instead of being unmapped
// and faulted in again page by page (see runtime/process_tuning.cpp for what that cost).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "runtime/process_tuning.hpp"

namespace ddpt {
namespace {

constexpr size_t kBlockBytes = size_t{64} << 20;  // above glibc's largest mmap threshold
constexpr long kPageBytes = 4096;

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Minor page faults of allocating, writing and freeing one block of kBlockBytes.
long faults_of_one_block() {
  const long before = minor_faults();
  void* block = std::malloc(kBlockBytes);
  EXPECT_NE(block, nullptr);
  std::memset(block, 1, kBlockBytes);
  asm volatile("" : : "r"(block) : "memory");  // the compiler may not drop the unread writes
  std::free(block);
  return minor_faults() - before;
}

TEST(ProcessTuning, LargeBlocksAreReusedNotFaultedInAgain) {
  // As tune_process() decides: GLIBC_TUNABLES counts only where it sets glibc.malloc.* (the CI's
  // kernel settings set glibc.cpu.hwcaps, which leaves malloc to tune_process()).
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if ((tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) ||
      std::getenv("MALLOC_MMAP_MAX_") != nullptr || std::getenv("MALLOC_ARENA_MAX") != nullptr) {
    GTEST_SKIP() << "the environment sets malloc's parameters: tune_process() leaves them alone";
  }
  tune_process();
  faults_of_one_block();  // the first block is new memory
  const long whole_block = static_cast<long>(kBlockBytes) / kPageBytes;
  // Reused: a few pages of bookkeeping at most, against 16384 for a block faulted in again.
  EXPECT_LT(faults_of_one_block(), whole_block / 16) << "on the main thread";
  long on_another_thread = 0;
  std::thread([&] { on_another_thread = faults_of_one_block(); }).join();
  EXPECT_LT(on_another_thread, whole_block / 16) << "on another thread";
}

}  // namespace
}  // namespace ddpt
