// Logging: rank 0 speaks, other ranks report only warnings and errors, prefixed [rank R host].
// Built on spdlog; call sites use spdlog::info/warn/error through the default logger.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace ddpt {

// Installs the default logger for this rank. Safe to call again (replaces it).
void init_logging(int world_rank, const std::string& host);
// Rank 0 also copies its output into a file (run.dir/log.txt). Other ranks: no-op.
void add_log_file(const std::string& path);

}  // namespace ddpt
