// main() for tests run under mpirun: owns MPI_Init/Finalize, lets rank 0 print the usual
// GoogleTest output, makes other ranks print only their failures (prefixed [rank R]), and gives
// every rank the same exit code (failed anywhere = failed everywhere). The process is tuned as
// ddptrain tunes itself, so that tests take the same MPI-IO and malloc paths, and its CPU
// convolutions are checked as ddptrain checks them before a model runs: where LibTorch's oneDNN
// computes them wrong (Debian 13's LibTorch 2.6), ddptrain trains on ATen's kernels, and so must
// the tests (on oneDNN, the CNN's gradients came out NaN in about one run in three).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "models/cpu_convolutions.hpp"
#include "runtime/mpi_env.hpp"
#include "runtime/process_tuning.hpp"
#include "util/log.hpp"

namespace {

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // The name is kept here: asking UnitTest for the current test inside OnTestPartResult would
  // take a mutex GoogleTest already holds there.
  void OnTestStart(const testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure in %s\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(), test_.c_str(),
                 result.summary());
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  ddpt::tune_process();  // as ddptrain does: MPI-IO through ROMIO, malloc keeping freed memory
  int provided = 0;
  MPI_Init_thread(&argc, &argv, ddpt::MpiEnv::kRequiredThreadLevel, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  testing::InitGoogleTest(&argc, argv);
  ddpt::init_logging(rank, "test");
  spdlog::set_level(spdlog::level::warn);  // tests print their own findings, not progress
  ddpt::choose_cpu_convolutions();
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  // A filter that matches nothing must not pass silently (a renamed test would stop running).
  if (testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    if (rank == 0) std::fprintf(stderr, "no test matched the filter\n");
    failed = 1;
  }
  int failed_anywhere = 0;
  MPI_Allreduce(&failed, &failed_anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed_anywhere;
}
