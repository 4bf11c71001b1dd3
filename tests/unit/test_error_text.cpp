// Exit codes of the errors that reach main(): ddptrain's typed errors carry theirs; LibTorch's
// CUDA out-of-memory error, wherever it is thrown, is exit code 6 (README, "Exit codes").
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <stdexcept>
#include <string>

#include "util/error.hpp"
#include "util/error_text.hpp"
#include "util/process_identity.hpp"

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

// Standard error as one end of a packet socket, for the duration of the object: every write(2)
// to it is one packet, so the packets show how a line left the process.
class StderrPackets {
 public:
  StderrPackets() {
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, ends_.data()) != 0)
      throw std::runtime_error("socketpair");
    saved_ = dup(STDERR_FILENO);
    dup2(ends_[0], STDERR_FILENO);
  }
  ~StderrPackets() {
    restore();
    close(ends_[0]);
    close(ends_[1]);
  }
  StderrPackets(const StderrPackets&) = delete;
  StderrPackets& operator=(const StderrPackets&) = delete;

  void restore() {
    if (saved_ < 0) return;
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  // The next packet written, or "" if there is none.
  std::string next() {
    std::string packet(65536, '\0');
    const ssize_t size = recv(ends_[1], packet.data(), packet.size(), MSG_DONTWAIT);
    packet.resize(size > 0 ? static_cast<size_t>(size) : 0);
    return packet;
  }

 private:
  std::array<int, 2> ends_{-1, -1};
  int saved_ = -1;
};

// A rank's error line leaves the process in one write. glibc 2.37+ (Debian 13) prints stderr
// through a 128-byte stage, and Open MPI 5's launcher let the pieces part: the head of an error
// line landed in the job's stdout (quota_exceeded_async failed in CI).
TEST(ErrorText, RankErrorLineIsOneWrite) {
  const std::string message = "checkpoint 'step_00000030.h5' could not be written (Disk quota " +
                              std::string(400, 'x') + ")";
  StderrPackets packets;
  print_rank_error(std::runtime_error(message));
  packets.restore();
  EXPECT_EQ(packets.next(), process_tag() + " ddptrain: error: " + message + "\n");
  EXPECT_EQ(packets.next(), "");
}

}  // namespace
}  // namespace ddpt
