#include "runtime/host_memory.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace ddpt {
namespace {

std::optional<int64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  int64_t value = 0;
  if (in >> value) return value;
  return std::nullopt;  // missing, or "max" (no limit)
}

std::optional<int64_t> mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

// The cgroup directories of this process's memory controller: cgroup v2 ("0::/path") and v1
// ("N:memory:/path"). Inside a cgroup namespace the path is relative to the mount, so the mount's
// root is tried too.
struct CgroupLimit {
  int64_t left = 0;
  std::string file;
};

std::optional<CgroupLimit> cgroup_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<CgroupLimit> tightest;
  auto consider = [&](const std::string& dir, const char* limit_file, const char* usage_file) {
    const std::optional<int64_t> limit = read_number(dir + "/" + limit_file);
    const std::optional<int64_t> usage = read_number(dir + "/" + usage_file);
    // cgroup v1 writes "no limit" as a number near INT64_MAX, rounded to pages.
    if (!limit || !usage || *limit >= (int64_t{1} << 62)) return;
    const int64_t left = std::max<int64_t>(0, *limit - *usage);
    if (!tightest || left < tightest->left) tightest = CgroupLimit{left, dir + "/" + limit_file};
  };
  while (std::getline(in, line)) {
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // v2
      for (const std::string& dir : {"/sys/fs/cgroup" + path, std::string("/sys/fs/cgroup")}) {
        consider(dir, "memory.max", "memory.current");
      }
    } else if (controllers == "memory") {  // v1
      for (const std::string& dir :
           {"/sys/fs/cgroup/memory" + path, std::string("/sys/fs/cgroup/memory")}) {
        consider(dir, "memory.limit_in_bytes", "memory.usage_in_bytes");
      }
    }
  }
  return tightest;
}

// A field of /proc/self/status in bytes ("VmSize:  1301388 kB").
std::optional<int64_t> status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream values(line.substr(field.size() + 1));
    int64_t kib = 0;
    if (values >> kib) return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<HostMemory> process_memory_left() {
  std::optional<HostMemory> tightest;
  auto consider = [&](int resource, const char* field, const char* name) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
    const std::optional<int64_t> used = status_bytes(field);
    if (!used) return;
    const int64_t left = std::max<int64_t>(0, static_cast<int64_t>(limit.rlim_cur) - *used);
    if (!tightest || left < tightest->available_bytes) {
      tightest = HostMemory{left, std::string(name) + " of each rank, less its " + field};
    }
  };
  consider(RLIMIT_AS, "VmSize", "RLIMIT_AS (prlimit --as, ulimit -v)");
  consider(RLIMIT_DATA, "VmData", "RLIMIT_DATA (prlimit --data)");
  return tightest;
}

std::optional<HostMemory> host_memory_available() {
  const std::optional<int64_t> available = mem_available();
  if (!available) return std::nullopt;
  HostMemory memory{*available, "MemAvailable in /proc/meminfo"};
  if (const std::optional<CgroupLimit> limit = cgroup_limit(); limit && limit->left < *available) {
    memory = {limit->left, "the memory limit of this job's cgroup, " + limit->file};
  }
  return memory;
}

}  // namespace ddpt
