#include "util/stop_signal.hpp"

#include <csignal>
#include <ctime>

namespace ddpt {
namespace {

// A repeat within this window is the same request delivered twice (SLURM signals the tasks of a
// step and srun forwards the same signal); a later one means "stop now".
constexpr time_t kRepeatIsDuplicateSeconds = 5;

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_stopping = 0;
volatile time_t g_first_signal_at = 0;

time_t monotonic_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return now.tv_sec;
}

extern "C" void record_stop_signal(int signal_number) {
  if (g_stopping != 0) return;  // the checkpoint is being written: let it finish
  if (g_stop_signal != 0) {
    if (monotonic_seconds() - g_first_signal_at < kRepeatIsDuplicateSeconds) return;
    std::signal(signal_number, SIG_DFL);  // asked again: the default action, at once
    std::raise(signal_number);
    return;
  }
  g_first_signal_at = monotonic_seconds();
  g_stop_signal = signal_number;
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress go on; the loop stops later
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int pending_stop_signal() noexcept {
  return g_stop_signal;
}

void mark_stopping() noexcept {
  g_stopping = 1;
}

std::string signal_name(int signal_number) {
  switch (signal_number) {
    case SIGUSR1:
      return "SIGUSR1";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "signal " + std::to_string(signal_number);
  }
}

}  // namespace ddpt
