// Logging: rank 0 speaks, other ranks report only warnings and errors, prefixed [rank R host].
// Built on spdlog; call sites use spdlog::info/warn/error through the default logger.
//
// Rank 0's console can also hold one status line (the live progress bar) below its messages:
// every message first erases it and then draws it again underneath, so that messages printed
// while it is shown (evaluations, checkpoints, warnings) never run into it.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace ddpt {

// Installs the default logger for this rank. Safe to call again (replaces it).
void init_logging(int world_rank, const std::string& host);
// Rank 0's messages go to standard error from here on, for a command whose standard output is
// its product (generate --prompt prints the text alone).
void log_messages_to_stderr();
// Rank 0 also copies its output into a file (run.dir/log.txt). Other ranks: no-op.
void add_log_file(const std::string& path);
// Writes `message` at info level to the log files only (log.txt), not to the console: the
// progress lines while the console shows a progress bar instead. No-op without a file.
void log_to_file_only(const std::string& message);

// Draws (or redraws in place) the console's status line on standard output: `\r`, the text,
// and blanks over whatever was left of a longer previous one. No line feed.
void show_status_line(const std::string& text);
// Leaves the status line as last drawn and moves the console to a fresh line; no-op when none
// is shown.
void end_status_line();

}  // namespace ddpt
