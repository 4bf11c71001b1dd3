#include "app/run_summary.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "io/checkpoint.hpp"
#include "train/progress_display.hpp"
#include "util/byte_size.hpp"

namespace ddpt {

namespace {

// Where rank 0's steady steps went, and on a CPU how the ranks' steps compare: none, one or two
// (label, text) lines.
std::vector<std::pair<const char*, std::string>> step_split_lines(const RunOutcome& outcome) {
  const StepSplit& split = outcome.summary->split;
  const std::string text = split.describe();
  if (!outcome.summary->split_is_work || text.empty()) return {};
  if (split.on_gpu) {
    // Every rank's comm wait would read 0 here (a stream's wait inside backward): no ranks' line.
    return {{"step time (GPU)", text + " (rank 0, steps after the warm-up; CUDA events: each "
                                       "phase's work and the GPU's idle time in it)"}};
  }
  std::vector<std::pair<const char*, std::string>> lines{
      {"step time", text + " (rank 0, steps after the warm-up)"}};
  if (std::string ranks = describe_rank_steps(outcome.ranks); !ranks.empty()) {
    lines.emplace_back("ranks' steps", std::move(ranks));
  }
  return lines;
}

}  // namespace

std::string run_summary_text(const Config& config, const DatasetInfo& info,
                             const RunOutcome& outcome) {
  std::string text = "summary";
  auto add = [&text](const char* label, const std::string& value) {
    text += fmt::format("\n  {:<16}: {}", label, value);
  };
  const int64_t end_step = outcome.resume_step + outcome.summary->steps;
  std::string steps = fmt::format("{} of {}", end_step, config.train.steps);
  if (outcome.resume_step > 0) {
    steps += fmt::format(" ({} in this run, resumed at step {})", outcome.summary->steps,
                         outcome.resume_step);
  }
  if (!outcome.stopped_by.empty()) {
    steps += ", stopped by " + outcome.stopped_by + " (continue with train.resume = auto)";
  } else if (end_step < config.train.steps) {
    steps += ", stopped early";
  }
  add("steps", steps);
  add("wall time", outcome.summary->seconds < 60
                       ? fmt::format("{:.2f} s", outcome.summary->seconds)
                       : fmt::format("{} ({:.0f} s)", format_duration(outcome.summary->seconds),
                                     outcome.summary->seconds));
  if (outcome.summary->steady_samples_per_s > 0) {
    std::string rate = fmt::format("{:.0f} samples/s", outcome.summary->steady_samples_per_s);
    if (info.task == Task::kNextToken) {
      int64_t tokens = 1;  // per sample: the window of data.block tokens
      for (const int64_t d : info.sample_shape) tokens *= d;
      rate += fmt::format(", {:.0f} tokens/s", outcome.summary->steady_samples_per_s * tokens);
    }
    add("throughput",
        rate + fmt::format(" (all ranks, after {} warm-up steps)", outcome.summary->warmup_steps));
  }
  for (const auto& [label, value] : step_split_lines(outcome)) add(label, value);
  if (!outcome.summary->records.empty()) {
    const StepRecord& last = outcome.summary->records.back();
    const int64_t from = outcome.summary->records.size() > 1
                             ? outcome.summary->records[outcome.summary->records.size() - 2].step
                             : outcome.resume_step;
    add("final loss",
        fmt::format("{:.5f} (mean over steps {}..{})", last.loss, from + 1, last.step));
    if (last.skipped_steps > 0) add("skipped steps", std::to_string(last.skipped_steps));
  }
  if (outcome.optimizer_state_bytes > 0) {
    add("optimizer state",
        human_bytes(outcome.optimizer_state_bytes) +
            (outcome.optimizer_sharded ? " on rank 0 (ZeRO-1: each rank holds its shard)"
                                       : " per rank (every rank holds all of it)"));
  }
  if (outcome.best_eval) {
    const auto& [best, step] = *outcome.best_eval;
    add("best eval", describe_eval(best, info.task) + fmt::format(" at step {}", step));
  }
  add("metrics", outcome.metrics_path);
  add("log", config.run.dir + "/log.txt");
  add("config", config.run.dir + "/config.cfg");
  if (const std::string latest = latest_checkpoint(config.run.dir);
      config.checkpoint.every > 0 || !latest.empty()) {
    add("checkpoints",
        config.run.dir + "/checkpoints" +
            (latest.empty()
                 ? ""
                 : " (latest: " + std::filesystem::path(latest).filename().string() + ")"));
  }
  if (outcome.checkpoints.count > 0) {
    const CheckpointTimes& c = outcome.checkpoints;
    add("checkpoint time",
        fmt::format("{} written; training stopped {:.3f} s for them, writing took {:.3f} s "
                    "({:.3f} s each)",
                    c.count, c.stall_s, c.write_s, c.write_s / static_cast<double>(c.count)));
  }
  return text;
}

}  // namespace ddpt
