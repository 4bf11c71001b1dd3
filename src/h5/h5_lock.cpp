#include "h5/h5_lock.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "util/stderr_line.hpp"

namespace ddpt {
namespace {
std::atomic<int> shared_scopes{0};
thread_local int locks_held = 0;  // this thread's depth in the recursive lock
}  // namespace

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

Hdf5Lock::Hdf5Lock() {
  hdf5_mutex().lock();
  ++locks_held;
}

Hdf5Lock::~Hdf5Lock() {
  --locks_held;
  hdf5_mutex().unlock();
}

Hdf5TryLock::Hdf5TryLock(double wait_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (!(owns_ = hdf5_mutex().try_lock())) {
    if (std::chrono::steady_clock::now() >= until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ++locks_held;
}

Hdf5TryLock::~Hdf5TryLock() {
  if (!owns_) return;
  --locks_held;
  hdf5_mutex().unlock();
}

Hdf5SharedScope::Hdf5SharedScope() {
  shared_scopes.fetch_add(1);
}

Hdf5SharedScope::~Hdf5SharedScope() {
  shared_scopes.fetch_sub(1);
}

void expect_hdf5_lock(const char* call) noexcept {
  if (locks_held > 0 || shared_scopes.load(std::memory_order_relaxed) == 0) return;
  write_stderr_line(std::string("ddptrain: internal error: HDF5 call without the HDF5 lock while "
                                "another thread uses HDF5 (a background checkpoint write, the "
                                "batch prefetcher): ") +
                    call);
  std::abort();
}

}  // namespace ddpt
