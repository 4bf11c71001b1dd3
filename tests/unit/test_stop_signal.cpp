// The stop signals of `train` (util/stop_signal.hpp) are taken by a thread of their own: no
// handler may interrupt a thread that computes, because oneDNN's JIT GEMM kernels point the stack
// pointer into the heap while they run and a handler's frame then lands there (oneDNN issue
// 4845; it crashed slurm_requeue_on_time_limit in a fresh-clone test run, at the time limit's
// SIGUSR1).
// Each test runs in a child process of its own: installing is for the life of a process.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#ifdef DDPTRAIN_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#else
#include "models/cpu_gemm.hpp"
#endif
#include "util/stop_signal.hpp"

namespace ddpt {
namespace {

bool blocks_stop_signals() {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, SIGUSR1) == 1 && sigismember(&mask, SIGTERM) == 1;
}

// Whether pending_stop_signal() reads `expected` within a few seconds.
bool recorded_soon(int expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pending_stop_signal() == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Ends the child: 0 if `ok`, else 1 after saying why on stderr.
[[noreturn]] void end_child(bool ok, const char* why) {
  if (!ok) std::fprintf(stderr, "%s\n", why);
  std::_Exit(ok ? 0 : 1);
}

// C [m, n] = A [m, k] B^T ([n, k]) on oneDNN's own sgemm where it is built in (its JIT kernels,
// AVX2 or AVX-512, are the ones that move the stack pointer), else on ddptrain's CPU GEMM.
void sgemm_abt(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
#ifdef DDPTRAIN_HAVE_ONEDNN
  if (dnnl_sgemm('N', 'T', m, n, k, 1.0f, a, k, b, k, 0.0f, c, n) != dnnl_success) {
    end_child(false, "dnnl_sgemm failed");
  }
#else
  cpu_sgemm(false, true, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n);
#endif
}

// Child: installs, checks the masks of this thread and of one it starts, signals the process.
void blocked_yet_recorded() {
  install_stop_signal_handlers();
  if (!blocks_stop_signals()) end_child(false, "the installing thread does not block them");
  bool started_thread_blocks = false;
  std::thread([&] { started_thread_blocks = blocks_stop_signals(); }).join();
  if (!started_thread_blocks) end_child(false, "a thread started later does not block them");
  kill(getpid(), SIGTERM);  // to the process, as SLURM and scancel send it
  end_child(recorded_soon(SIGTERM), "SIGTERM was not recorded");
}

// Child: a storm of process-directed SIGUSR1 for two seconds while this thread multiplies
// matrices and allocates beside them. Two seconds: repeats within five of the first are
// duplicates; later ones end the process.
void gemms_in_a_signal_storm() {
  install_stop_signal_handlers();
  constexpr int64_t kRows = 64, kIn = 512, kOut = 512;
  const std::vector<float> x(kRows * kIn, 0.5f);
  const std::vector<float> w(kOut * kIn, 0.25f);
  std::vector<float> y(kRows * kOut);
  std::atomic<bool> storming{true};
  std::thread storm([&] {
    while (storming.load()) {
      kill(getpid(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
    const std::vector<float> beside(1000 + i % 50, 1.0f);  // heap blocks by oneDNN's buffers
    sgemm_abt(kRows, kOut, kIn, x.data(), w.data(), y.data());
  }
  storming.store(false);
  storm.join();
  end_child(pending_stop_signal() == SIGUSR1 && y[0] == 0.5f * 0.25f * kIn,
            "the signal was not recorded, or the product is wrong");
}

TEST(StopSignalDeathTest, BlockedInTheInstallingThreadAndInEveryThreadItStartsYetRecorded) {
  EXPECT_EXIT(blocked_yet_recorded(), ::testing::ExitedWithCode(0), "");
}

// With a handler on the computing thread, the heap was corrupted within a second on every try
// (glibc aborts: "corrupted size vs. prev_size while consolidating").
TEST(StopSignalDeathTest, ASignalStormDuringGemmsLeavesTheHeapIntact) {
  EXPECT_EXIT(gemms_in_a_signal_storm(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ddpt
