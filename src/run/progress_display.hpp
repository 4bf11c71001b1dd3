// Live training progress on rank 0 (log.progress): on a terminal, one line redrawn in place with a
// bar, step/total, percent, latest loss, samples/s and ETA, while the periodic progress lines go
// to log.txt only; elsewhere (SLURM logs, pipes, ctest) the periodic lines, as plain text.
// Rendering is pure (render_bar, format_duration) so that it is tested without a terminal.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "util/stopwatch.hpp"

#include "config/choices.hpp"

namespace ddpt {

enum class ProgressStyle { kLines, kBar };

// log.progress (auto | bar | lines) and whether rank 0's output reaches a terminal: auto gives
// the bar on a terminal and lines elsewhere; bar and lines are taken as asked.
ProgressStyle choose_progress_style(ProgressChoice option, bool terminal);

// Whether standard output reaches a terminal. Open MPI gives its local ranks a pseudo-terminal
// of its own whatever mpirun writes to (a pipe, a file); such a terminal has no size, and then
// the answer is whether the launcher's (the parent process's) standard output is a terminal.
bool stdout_is_terminal();

// What the bar shows. NaN or a negative value: not known yet.
struct ProgressState {
  int64_t step = 0;                                        // optimizer steps done
  int64_t total = 0;                                       // train.steps
  double loss = std::numeric_limits<double>::quiet_NaN();  // latest logged loss (global mean)
  double samples_per_s = -1;                               // global, steady state
  double eta_s = -1;                                       // seconds to the last step
};

// "4:05" under an hour, "1:02:03" from one hour on; "--:--" for a negative or non-finite value.
std::string format_duration(double seconds);

// One line of at most width - 1 characters (the last column is left free, so the terminal never
// wraps): " 120/400 [=======>          ]  30%  loss 0.7354  45857 samples/s  ETA 0:03".
// The bar is dropped on narrow terminals, and the text cut as a last resort.
std::string render_bar(const ProgressState& state, int width);

class ProgressDisplay {
 public:
  // Rank 0 of a run from `first_step` (steps already done) to `total_steps`, `global_batch`
  // samples a step; the first `warmup_steps` are left out of the rate and the ETA.
  ProgressDisplay(ProgressStyle style, int64_t first_step, int64_t total_steps, double global_batch,
                  int64_t warmup_steps);
  ~ProgressDisplay();  // finish()
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  bool shows_bar() const { return style_ == ProgressStyle::kBar; }
  // After each optimizer step: redraws the bar, at most kMaxRedrawsPerSecond times a second.
  void step_done(int64_t done);
  // A periodic progress line and its loss: the line goes to the console in lines mode and to
  // log.txt only under the bar; the loss goes into the bar.
  void record(double loss, const std::string& line);
  // Draws the final state and leaves the terminal on a fresh line. Idempotent.
  void finish();

 private:
  ProgressState state() const;
  void draw();

  ProgressStyle style_;
  int64_t first_step_;
  int64_t total_;
  double global_batch_;
  int64_t warmup_steps_;
  int64_t done_ = 0;
  double loss_ = std::numeric_limits<double>::quiet_NaN();
  int64_t steady_from_step_ = -1;  // the rate counts steps after this one; -1: still warming up
  Stopwatch steady_;
  Stopwatch since_draw_;
  bool drawn_ = false;
  bool finished_ = false;
  int width_fd_ = -1;  // where the terminal width is read; -1: not a terminal
};

}  // namespace ddpt
