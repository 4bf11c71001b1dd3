#include "util/log.hpp"
#include "util/stderr_line.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <vector>

namespace ddpt {
namespace {

bool g_is_rank0 = true;
std::vector<spdlog::sink_ptr> g_file_sinks;  // of the current default logger (log.txt)

// Rank 0's standard output: log messages, and the status line kept below them. One mutex orders
// every write, so a message from another thread never lands in the middle of a redraw.
class Console {
 public:
  void message(const char* text, size_t size) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (shown_) erase();
    std::fwrite(text, 1, size, messages_);
    if (shown_) std::fwrite(status_.data(), 1, status_.size(), stdout);  // messages end in \n
    std::fflush(messages_);
    std::fflush(stdout);
  }
  void send_messages_to(std::FILE* stream) {
    const std::lock_guard<std::mutex> lock(mutex_);
    messages_ = stream;
  }
  void show(const std::string& text) {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::string out = "\r" + text;
    // Blanks over the rest of a longer previous line (no terminal escape codes needed).
    if (shown_ && status_.size() > text.size()) out.append(status_.size() - text.size(), ' ');
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    status_ = text;
    shown_ = true;
  }
  void end() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!shown_) return;
    std::fputc('\n', stdout);
    std::fflush(stdout);
    status_.clear();
    shown_ = false;
  }

 private:
  void erase() {
    const std::string blank = "\r" + std::string(status_.size(), ' ') + "\r";
    std::fwrite(blank.data(), 1, blank.size(), stdout);
  }

  std::mutex mutex_;
  std::FILE* messages_ = stdout;
  std::string status_;
  bool shown_ = false;
};

Console& console() {
  static Console instance;
  return instance;
}

// Rank 0's console sink: spdlog formats, the Console writes (around the status line).
class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    console().message(formatted.data(), formatted.size());
  }
  void flush_() override { std::fflush(stdout); }
};

// A log.txt that cannot be written (a full disk, a quota) neither ends the run nor floods the
// console with spdlog's "[*** LOG ERROR ***]" line per message: the first failure is one warning
// on standard error, later ones are dropped. The checkpoint and metrics writers report a full
// disk as the error that ends the job.
void report_log_file_error(const std::string& message) {
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) return;
  write_stderr_line("ddptrain: warning: " + message + "; log.txt is incomplete from here on");
}

}  // namespace

void init_logging(int world_rank, const std::string& host) {
  g_is_rank0 = world_rank <= 0;
  g_file_sinks.clear();
  std::shared_ptr<spdlog::logger> logger;
  if (g_is_rank0) {
    logger = std::make_shared<spdlog::logger>("ddptrain", std::make_shared<ConsoleSink>());
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

void log_messages_to_stderr() {
  console().send_messages_to(stderr);
}

void add_log_file(const std::string& path) {
  if (!g_is_rank0) return;
  auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  sink->set_pattern("[%Y-%m-%d %H:%M:%S] %v");
  spdlog::default_logger()->sinks().push_back(sink);
  spdlog::default_logger()->set_error_handler(report_log_file_error);
  g_file_sinks.push_back(sink);
}

void log_to_file_only(const std::string& message) {
  if (!g_is_rank0) return;
  const spdlog::details::log_msg msg(spdlog::default_logger()->name(), spdlog::level::info,
                                     message);
  for (const spdlog::sink_ptr& sink : g_file_sinks) {
    if (!sink->should_log(msg.level)) continue;
    try {
      sink->log(msg);
      sink->flush();
    } catch (const spdlog::spdlog_ex& e) {
      report_log_file_error(e.what());
    }
  }
}

void show_status_line(const std::string& text) {
  console().show(text);
}

void end_status_line() {
  console().end();
}

}  // namespace ddpt
