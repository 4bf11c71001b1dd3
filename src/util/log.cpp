#include "util/log.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace ddpt {
namespace {
bool g_is_rank0 = true;
}

void init_logging(int world_rank, const std::string& host) {
  g_is_rank0 = world_rank <= 0;
  std::shared_ptr<spdlog::logger> logger;
  if (g_is_rank0) {
    logger = std::make_shared<spdlog::logger>("ddptrain",
                                              std::make_shared<spdlog::sinks::stdout_sink_mt>());
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
  } else {
    logger = std::make_shared<spdlog::logger>("ddptrain",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("[rank " + std::to_string(world_rank) + " " + host + "] %v");
    logger->set_level(spdlog::level::warn);
  }
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void add_log_file(const std::string& path) {
  if (!g_is_rank0) return;
  auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  sink->set_pattern("[%Y-%m-%d %H:%M:%S] %v");
  spdlog::default_logger()->sinks().push_back(sink);
}

}  // namespace ddpt
