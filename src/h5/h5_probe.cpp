#include "h5/h5_probe.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "h5/h5_probe_contract.hpp"
#include "util/error.hpp"

extern char** environ;

namespace ddpt {
namespace {

// A real file's structure takes milliseconds to walk, a large checkpoint's a fraction of a
// second; a damaged one that makes HDF5 loop is given this long, or DDPTRAIN_H5PROBE_SECONDS
// (share/dev/fuzz.sh sets 1: libFuzzer calls an input that takes 10 s a hang).
constexpr int kDefaultProbeSeconds = 60;

int probe_seconds() {
  const char* text = std::getenv("DDPTRAIN_H5PROBE_SECONDS");
  if (text == nullptr) return kDefaultProbeSeconds;
  char* end = nullptr;
  const long seconds = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || seconds < 1 || seconds > 86400) {
    throw ConfigError(
        fmt::format("DDPTRAIN_H5PROBE_SECONDS = '{}': expected whole seconds, 1 to 86400", text));
  }
  return static_cast<int>(seconds);
}

constexpr const char* kProbeName = "ddptrain-h5probe";

// Beside the running executable (build/bin, or PREFIX/bin after `cmake --install`).
std::string probe_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    throw Error("cannot find the running executable (/proc/self/exe)", ExitCode::kInternal,
                Raised::kThisRank);
  }
  const std::filesystem::path probe = self.parent_path() / kProbeName;
  if (access(probe.c_str(), X_OK) != 0) {
    throw Error(fmt::format("{} is missing: it must be installed beside {} (it checks every HDF5 "
                            "file before ddptrain reads it)",
                            probe.string(), self.filename().string()),
                ExitCode::kInternal, Raised::kThisRank);
  }
  return probe.string();
}

// The probe's wait status, or -1 after killing it at the deadline. A child reaped by someone
// else (SIGCHLD ignored) counts as passed: there is nothing to tell.
int wait_with_deadline(pid_t child, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return 0;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

// posix_spawn attributes that start the child with no signal blocked, as a new process would
// start: `train` blocks SIGUSR1 and SIGTERM in its threads (util/stop_signal.cpp), and a child
// inherits the mask of the thread that starts it.
class UnblockedSignals {
 public:
  UnblockedSignals() {
    posix_spawnattr_init(&attributes_);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes_, &none);
    posix_spawnattr_setflags(&attributes_, POSIX_SPAWN_SETSIGMASK);
  }
  ~UnblockedSignals() { posix_spawnattr_destroy(&attributes_); }
  UnblockedSignals(const UnblockedSignals&) = delete;
  UnblockedSignals& operator=(const UnblockedSignals&) = delete;
  const posix_spawnattr_t* get() const { return &attributes_; }

 private:
  posix_spawnattr_t attributes_;
};

}  // namespace

void probe_hdf5_file(const std::string& path) {
  const std::string probe = probe_executable();
  const int seconds = probe_seconds();
  std::vector<char*> argv = {const_cast<char*>(probe.c_str()), const_cast<char*>(path.c_str()),
                             nullptr};
  // posix_spawn: glibc starts the child without copying this process's memory (CLONE_VFORK),
  // which is safe beside memory registered with an InfiniBand adapter, unlike fork().
  pid_t child = 0;
  const UnblockedSignals unblocked;
  const int spawned =
      posix_spawn(&child, probe.c_str(), nullptr, unblocked.get(), argv.data(), environ);
  if (spawned != 0) {
    throw Error(fmt::format("cannot start {}: {}", probe, std::strerror(spawned)),
                ExitCode::kInternal, Raised::kThisRank);
  }
  const int status = wait_with_deadline(child, seconds);
  if (status == -1) {
    throw DataError(fmt::format("'{}' is damaged: HDF5 was still reading its structure after {} s "
                                "(checked by {} before opening it)",
                                path, seconds, kProbeName),
                    Raised::kThisRank);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == probe::kNeedsTooMuchMemory) {
    throw DataError(fmt::format("'{}' is damaged: HDF5 asked for more than {} of memory to read "
                                "its structure (checked by {} before opening it)",
                                path, probe::kAddressSpaceText, kProbeName),
                    Raised::kThisRank);
  }
  const std::string how = WIFSIGNALED(status) ? fmt::format("signal {}, {}", WTERMSIG(status),
                                                            strsignal(WTERMSIG(status)))
                                              : fmt::format("exit status {}", WEXITSTATUS(status));
  throw DataError(fmt::format("'{}' is damaged: reading its HDF5 structure crashed the HDF5 "
                              "library or exhausted its memory ({}; checked by {} in a process of "
                              "its own before opening it)",
                              path, how, kProbeName),
                  Raised::kThisRank);
}

}  // namespace ddpt
