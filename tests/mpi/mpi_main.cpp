// main() for tests run under mpirun: owns MPI_Init/Finalize, lets rank 0 print the usual
// GoogleTest output, makes other ranks print only their failures and skips (prefixed [rank R]),
// and gives every rank the same exit code: 1 when a case failed anywhere or the filter matched no
// case, else 77 (ctest's SKIP_RETURN_CODE) when a case skipped anywhere, else 0. The process is
// tuned as ddptrain tunes itself, so that tests take the same MPI-IO and malloc paths, and its CPU
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

constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE for the MPI tests

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // The name is kept here: asking UnitTest for the current test inside OnTestPartResult would
  // take a mutex GoogleTest already holds there.
  void OnTestStart(const testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed() && !result.skipped()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s in %s\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.failed() ? "failure" : "skipped", test_.c_str(), result.summary());
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
  // A skip (GTEST_SKIP) is reported as one, not as a pass: check.sh fails it under CI=true.
  int outcome[2] = {failed, testing::UnitTest::GetInstance()->skipped_test_count() > 0 ? 1 : 0};
  int anywhere[2] = {0, 0};
  MPI_Allreduce(outcome, anywhere, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  if (anywhere[0] != 0) return 1;
  return anywhere[1] != 0 ? kSkipped : 0;
}
