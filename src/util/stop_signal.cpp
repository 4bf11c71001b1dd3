#include "util/stop_signal.hpp"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <thread>

namespace ddpt {
namespace {

// A repeat within this window is the same request delivered twice (SLURM signals the tasks of a
// step and srun forwards the same signal); a later one means "stop now".
constexpr time_t kRepeatIsDuplicateSeconds = 5;

// Lock-free atomics: safe to touch from a signal handler as well as from the waiting thread.
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stopping{0};
std::atomic<time_t> g_first_signal_at{0};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<time_t>::is_always_lock_free);

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  return set;
}

time_t monotonic_seconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return now.tv_sec;
}

// The default action of `signal_number` (ending the process), at once, from this thread.
void end_by_default_action(int signal_number) {
  std::signal(signal_number, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signal_number);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  std::raise(signal_number);
}

// Async-signal-safe: it also runs as a handler (see install_stop_signal_handlers).
void record_stop_signal(int signal_number) {
  if (g_stopping.load() != 0) return;  // the checkpoint is being written: let it finish
  if (g_stop_signal.load() != 0) {
    if (monotonic_seconds() - g_first_signal_at.load() < kRepeatIsDuplicateSeconds) return;
    end_by_default_action(signal_number);  // asked again: stop now
    return;
  }
  g_first_signal_at.store(monotonic_seconds());
  g_stop_signal.store(signal_number);
}

extern "C" void on_stop_signal(int signal_number) {
  record_stop_signal(signal_number);
}

void wait_for_stop_signals(sigset_t set) {
  for (;;) {
    int signal_number = 0;
    if (sigwait(&set, &signal_number) == 0) record_stop_signal(signal_number);
  }
}

}  // namespace

void install_stop_signal_handlers() {
  if (g_installed.exchange(true)) return;
  // Why a thread of their own: a handler runs on the stack pointer of whichever thread the signal
  // interrupts, and oneDNN's JIT GEMM kernels (AVX2 and AVX-512; fixed in oneDNN 3.11.2, after
  // every LibTorch this builds against) point it into a heap buffer while they run: a handler
  // arriving then writes its frame into the heap, and a later free() aborts ("corrupted size vs.
  // prev_size", oneDNN issue 4845). So the calling thread blocks these signals, and every thread
  // started after it (OpenMP's, MPI's, ours) inherits the block; one thread takes them with
  // sigwait() and runs ordinary code. main() calls this before any other thread exists.
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(wait_for_stop_signals, set).detach();
  // For a thread that unblocks them again (a library's own), a handler that only records.
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in progress go on; the loop stops later
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int pending_stop_signal() noexcept {
  return g_stop_signal.load(std::memory_order_relaxed);
}

void mark_stopping() noexcept {
  g_stopping.store(1);
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
