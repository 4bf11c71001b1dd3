// One line on standard error in a single write(2).
//
// Why not fprintf: glibc 2.37 and later (Debian 13) format into a 128-byte stage for an
// unbuffered stream like stderr, so a longer line leaves the process in pieces. Under Open MPI
// 5's launcher (PRRTE) the pieces can part: in 2 of 20 runs of quota_exceeded_async on Debian 13
// the first 128 bytes of the error line were in the job's stdout, in front of the next progress
// line, and only the rest in its stderr. One write of the whole line (atomic on a pipe up to
// PIPE_BUF = 4096 bytes) arrives whole, and no other thread's output lands in its middle.
#pragma once

#include <string_view>

namespace ddpt {

// Writes `text` and a newline to file descriptor 2 in one write (retried only for what the
// kernel did not take). Safe to call from any thread and before std::abort.
void write_stderr_line(std::string_view text) noexcept;

}  // namespace ddpt
