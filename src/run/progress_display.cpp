#include "run/progress_display.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "util/error.hpp"
#include "util/log.hpp"

namespace ddpt {
namespace {

// At most this many redraws a second: smooth to the eye, and negligible work next to a step.
constexpr double kMaxRedrawsPerSecond = 8;
// Width assumed when the terminal does not say (a pseudo-terminal nobody sized).
constexpr int kDefaultWidth = 80;
// The bar itself: no wider than this on wide terminals, and left out below the minimum.
constexpr int kMaxBarWidth = 40;
constexpr int kMinBarWidth = 10;
// Durations beyond this (three years) are estimates not worth showing.
constexpr double kLongestDurationS = 1e8;
// Processes walked up from this one to find the launcher's output (wrapper scripts in between).
constexpr int kMaxAncestors = 8;

int columns_of(int fd) {
  winsize size{};
  return ioctl(fd, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

// Parent of `pid` from /proc/PID/stat ("pid (comm) state ppid ..."); 0 if unknown.
pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t comm_end = text.rfind(')');
  if (comm_end == std::string::npos) return 0;
  std::istringstream rest(text.substr(comm_end + 1));
  char state = 0;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

// The terminal standard output reaches, opened for reading its width; -1 if none. A terminal
// with a size is a real one. An unsized pseudo-terminal is Open MPI's (it gives one to its local
// ranks whatever mpirun writes to): walk up past the processes that share it (wrapper scripts) to
// the launcher, and take its standard output if that is a terminal.
int open_output_terminal() {
  if (!isatty(STDOUT_FILENO)) return -1;
  if (columns_of(STDOUT_FILENO) > 0) return dup(STDOUT_FILENO);
  const char* own_name = ttyname(STDOUT_FILENO);
  const std::string own = own_name ? own_name : "";
  pid_t pid = getppid();
  for (int depth = 0; depth < kMaxAncestors && pid > 1; ++depth, pid = parent_of(pid)) {
    const std::string link = "/proc/" + std::to_string(pid) + "/fd/1";
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(link, ec).string();
    if (ec) return -1;  // another user's process, or no standard output
    if (target == own) continue;
    if (target.rfind("/dev/pts/", 0) != 0 && target.rfind("/dev/tty", 0) != 0) return -1;
    const int fd = open(link.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && isatty(fd)) return fd;
    if (fd >= 0) close(fd);
    return -1;
  }
  return -1;
}

}  // namespace

ProgressStyle choose_progress_style(ProgressChoice option, bool terminal) {
  switch (option) {
    case ProgressChoice::kBar:
      return ProgressStyle::kBar;
    case ProgressChoice::kLines:
      return ProgressStyle::kLines;
    case ProgressChoice::kAuto:
      break;
  }
  return terminal ? ProgressStyle::kBar : ProgressStyle::kLines;
}

bool stdout_is_terminal() {
  const int fd = open_output_terminal();
  if (fd < 0) return false;
  close(fd);
  return true;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kLongestDurationS) return "--:--";
  const int64_t total = std::llround(seconds);
  const int64_t hours = total / 3600;
  const int64_t minutes = total / 60 % 60;
  const int64_t secs = total % 60;
  if (hours > 0) return fmt::format("{}:{:02}:{:02}", hours, minutes, secs);
  return fmt::format("{}:{:02}", minutes, secs);
}

std::string render_bar(const ProgressState& state, int width) {
  const int64_t step = std::clamp<int64_t>(state.step, 0, std::max<int64_t>(state.total, 0));
  const double fraction = state.total > 0 ? static_cast<double>(step) / state.total : 1.0;
  const int64_t percent = state.total > 0 ? step * 100 / state.total : 100;
  const std::string total = std::to_string(state.total);
  const std::string count = fmt::format("{:>{}}/{}", step, total.size(), total);
  // Padded, so that the bar keeps its width while the loss changes (0.5 -> 0.4812).
  const std::string loss =
      fmt::format("{:<6}", std::isfinite(state.loss) ? fmt::format("{:.4g}", state.loss) : "-");
  const std::string rate =
      state.samples_per_s >= 0 ? fmt::format("{:.0f}", state.samples_per_s) : "-";
  const std::string tail = fmt::format(" {:>3}%  loss {}  {} samples/s  ETA {}", percent, loss,
                                       rate, format_duration(state.eta_s));
  const int room = std::max(width - 1, 0);
  const int bar = std::min(kMaxBarWidth, room - static_cast<int>(count.size() + tail.size()) - 3);
  std::string line = count;
  if (bar >= kMinBarWidth) {
    const int filled = static_cast<int>(fraction * bar);
    line += " [" + std::string(filled, '=');
    if (filled < bar) line += ">" + std::string(bar - filled - 1, ' ');
    line += "]";
  }
  line += tail;
  if (static_cast<int>(line.size()) > room) line.resize(room);
  return line;
}

ProgressDisplay::ProgressDisplay(ProgressStyle style, int64_t first_step, int64_t total_steps,
                                 double global_batch, int64_t warmup_steps)
    : style_(style),
      first_step_(first_step),
      total_(total_steps),
      global_batch_(global_batch),
      warmup_steps_(warmup_steps),
      done_(first_step) {
  if (warmup_steps_ <= 0) steady_from_step_ = first_step_;
  if (shows_bar()) width_fd_ = open_output_terminal();
}

ProgressDisplay::~ProgressDisplay() {
  try {
    finish();
  } catch (...) {  // a destructor never throws; the display is cosmetic
  }
}

void ProgressDisplay::step_done(int64_t done) {
  done_ = done;
  if (steady_from_step_ < 0 && done - first_step_ >= warmup_steps_) {
    steady_from_step_ = done;
    steady_.reset();
  }
  if (!shows_bar()) return;
  if (!drawn_ || since_draw_.seconds() >= 1.0 / kMaxRedrawsPerSecond) draw();
}

void ProgressDisplay::record(double loss, const std::string& line) {
  loss_ = loss;
  if (shows_bar()) {
    log_to_file_only(line);
  } else {
    spdlog::info("{}", line);
  }
}

void ProgressDisplay::finish() {
  if (finished_) return;
  finished_ = true;
  if (shows_bar() && done_ > first_step_) {
    draw();
    end_status_line();
  }
  if (width_fd_ >= 0) close(width_fd_);
  width_fd_ = -1;
}

ProgressState ProgressDisplay::state() const {
  ProgressState state;
  state.step = done_;
  state.total = total_;
  state.loss = loss_;
  const double seconds = steady_.seconds();
  if (steady_from_step_ >= 0 && done_ > steady_from_step_ && seconds > 0) {
    const double steps_per_s = static_cast<double>(done_ - steady_from_step_) / seconds;
    state.samples_per_s = steps_per_s * global_batch_;
    state.eta_s = static_cast<double>(std::max<int64_t>(total_ - done_, 0)) / steps_per_s;
  }
  return state;
}

void ProgressDisplay::draw() {
  const int columns = width_fd_ >= 0 ? columns_of(width_fd_) : 0;
  show_status_line(render_bar(state(), columns > 0 ? columns : kDefaultWidth));
  since_draw_.reset();
  drawn_ = true;
}

}  // namespace ddpt
