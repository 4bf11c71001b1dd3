// How much host memory this process may still take: the kernel's MemAvailable, and, inside a
// cgroup with a memory limit (a SLURM job with ConstrainRAMSpace, a container), what is left under
// that limit, whichever is smaller. Used to refuse a deck whose sizes cannot fit before anything
// is allocated (setup/memory_check.hpp): past the limit the kernel kills the job without a word.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddpt {

struct HostMemory {
  int64_t available_bytes = 0;
  std::string source;  // where the figure comes from, for messages
};

// nullopt where /proc/meminfo cannot be read (not Linux). The node's: its ranks share it.
std::optional<HostMemory> host_memory_available();

// What this process may still take under its own resource limits (`prlimit --as` or `--data`,
// `ulimit -v`: a limit set on each rank), less what it has mapped already; nullopt where no such
// limit is set. Past it an allocation fails (LibTorch throws from deep inside a constructor).
std::optional<HostMemory> process_memory_left();

}  // namespace ddpt
