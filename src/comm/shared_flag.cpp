#include "comm/shared_flag.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace ddpt {
namespace {

constexpr int kSpins = 256;  // polls before sleeping on a flag (a few microseconds)

long futex(std::atomic<uint32_t>& flag, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word lives in memory other processes map.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&flag), op, value, timeout, nullptr, 0);
}

// A hint to the core that this is a spin-wait loop.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void publish_flag(std::atomic<uint32_t>& flag, uint32_t value) {
  flag.store(value, std::memory_order_release);
  wake_flag_waiters(flag);
}

void wake_flag_waiters(std::atomic<uint32_t>& flag) {
  futex(flag, FUTEX_WAKE, INT_MAX, nullptr);
}

void wait_for_flag(std::atomic<uint32_t>& flag, uint32_t target) {
  for (int spin = 0; spin < kSpins; ++spin) {
    if (flag_reached(flag.load(std::memory_order_acquire), target)) return;
    relax();
  }
  // Asleep until the flag changes; the timeout only bounds a missed wake-up.
  const timespec timeout{0, 50'000'000};
  for (;;) {
    const uint32_t seen = flag.load(std::memory_order_acquire);
    if (flag_reached(seen, target)) return;
    futex(flag, FUTEX_WAIT, seen, &timeout);
  }
}

}  // namespace ddpt
