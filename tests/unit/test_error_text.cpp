// Exit codes of the errors that reach main(): ddptrain's typed errors carry theirs; LibTorch's
// CUDA out-of-memory error, wherever it is thrown, is exit code 6 (README, "Exit codes").
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "util/error.hpp"
#include "util/error_text.hpp"

namespace ddpt {
namespace {

int exit_code_of_thrown(const std::function<void()>& raise) {
  try {
    raise();
  } catch (const std::exception& error) {
    return exit_code_of(error);
  }
  ADD_FAILURE() << "nothing was thrown";
  return -1;
}

TEST(ErrorText, LibTorchOutOfMemoryIsExitCode6) {
  EXPECT_EQ(exit_code_of_thrown([] {
              TORCH_CHECK_WITH(OutOfMemoryError, false,
                               "CUDA out of memory. Tried to allocate 2.00 GiB");
            }),
            6);
  EXPECT_EQ(exit_code_of_thrown([] { throw OutOfMemoryError("out of GPU memory in step 1"); }), 6);
}

TEST(ErrorText, OtherLibTorchErrorsAreInternal) {
  EXPECT_EQ(exit_code_of_thrown([] { TORCH_CHECK(false, "shapes do not match"); }), 1);
  EXPECT_EQ(exit_code_of_thrown([] { throw ConfigError("bad option"); }), 2);
}

TEST(ErrorText, OutOfMemoryErrorIsThisRanksOnly) {
  // Another rank's GPU may have had room: the job is aborted, not ended collectively.
  EXPECT_FALSE(OutOfMemoryError("x").collective());
}

}  // namespace
}  // namespace ddpt
