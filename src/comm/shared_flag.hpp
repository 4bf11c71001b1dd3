// A counter in memory the node's ranks map (a POSIX shared-memory segment), that one rank bumps
// and others wait for: how the node-shared collectives (comm/node_all_reduce.hpp,
// comm/node_all_gather.hpp) say "arrived", "summed" or "done reading" without messages. Counters
// run on modulo 2^32. A waiter spins briefly, then sleeps on the word (a futex on the shared
// page), so it does not take the core from its own rank's compute.
#pragma once

#include <atomic>
#include <cstdint>

namespace ddpt {

static_assert(std::atomic<uint32_t>::is_always_lock_free);

// Whether a counter at `value` has reached `target` (is at most 2^31 past it).
inline bool flag_reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

// Stores `value` (release: what was written before is visible to whoever sees it) and wakes the
// waiters.
void publish_flag(std::atomic<uint32_t>& flag, uint32_t value);
// Wakes whoever sleeps on `flag` (after an atomic read-modify-write of it).
void wake_flag_waiters(std::atomic<uint32_t>& flag);
// Returns once `flag` has reached `target` (acquire).
void wait_for_flag(std::atomic<uint32_t>& flag, uint32_t target);

}  // namespace ddpt
