#include "app/run_summary.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "io/checkpoint.hpp"
#include "run/progress_display.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/stop_signal.hpp"

namespace ddpt {

namespace {

// "SIGUSR1" when a signal stopped the run before train.steps; "" otherwise.
std::string stopped_by(const Config& config, const RunResult& result) {
  if (result.stop_signal == 0 || result.end_step() >= config.train.steps) return "";
  return signal_name(result.stop_signal);
}

// (label, text) lines of the summary, in order.
using SummaryLines = std::vector<std::pair<const char*, std::string>>;

// Where rank 0's steady steps went, and how the ranks' steps compare: none, one or two lines.
SummaryLines step_split_lines(const RunResult& result) {
  const StepSplit& split = result.split;
  const std::string text = split.describe();
  if (!result.split_is_work || text.empty()) return {};
  const std::string how =
      split.on_gpu ? " (rank 0, steps after the warm-up; CUDA events: each phase's work and the "
                     "GPU's idle time in it)"
                   : " (rank 0, steps after the warm-up)";
  SummaryLines lines{{split.on_gpu ? "step time (GPU)" : "step time", text + how}};
  if (std::string ranks = describe_rank_steps(result.ranks); !ranks.empty()) {
    lines.emplace_back("ranks' steps", std::move(ranks));
  }
  return lines;
}

// "1500 of 1500", with a resume and an early stop said.
std::string steps_text(const Config& config, const RunResult& result) {
  const int64_t end_step = result.end_step();
  std::string steps = fmt::format("{} of {}", end_step, config.train.steps);
  if (result.first_step > 0) {
    steps += fmt::format(" ({} in this run, resumed at step {})", result.steps, result.first_step);
  }
  if (const std::string by = stopped_by(config, result); !by.empty()) {
    steps += ", stopped by " + by + " (continue with train.resume = auto)";
  } else if (end_step < config.train.steps) {
    steps += ", stopped early";
  }
  return steps;
}

// Steps, wall time, throughput and where the step's time went.
SummaryLines progress_lines(const Config& config, const DatasetInfo& info,
                            const RunResult& result) {
  SummaryLines lines{
      {"steps", steps_text(config, result)},
      {"wall time",
       result.seconds < 60
           ? fmt::format("{:.2f} s", result.seconds)
           : fmt::format("{} ({:.0f} s)", format_duration(result.seconds), result.seconds)}};
  if (result.steady_samples_per_s > 0) {
    std::string rate = fmt::format("{:.0f} samples/s", result.steady_samples_per_s);
    if (info.task == Task::kNextToken) {
      int64_t tokens = 1;  // per sample: the window of data.block tokens
      for (const int64_t d : info.sample_shape) tokens *= d;
      rate += fmt::format(", {:.0f} tokens/s", result.steady_samples_per_s * tokens);
    }
    lines.emplace_back("throughput", rate + fmt::format(" (all ranks, after {} warm-up steps)",
                                                        result.warmup_steps));
  }
  for (auto& line : step_split_lines(result)) lines.push_back(std::move(line));
  return lines;
}

// The final loss, skipped steps, optimizer state and best evaluation.
SummaryLines result_lines(const DatasetInfo& info, const RunResult& result) {
  SummaryLines lines;
  const std::vector<StepRecord>& records = result.records;
  if (!records.empty()) {
    const StepRecord& last = records.back();
    const int64_t from = records.size() > 1 ? records[records.size() - 2].step : result.first_step;
    lines.emplace_back("final loss", fmt::format("{:.5f} (mean over steps {}..{})", last.loss,
                                                 from + 1, last.step));
    if (last.skipped_steps > 0)
      lines.emplace_back("skipped steps", std::to_string(last.skipped_steps));
  }
  if (result.optimizer_state_bytes > 0) {
    lines.emplace_back("optimizer state",
                       human_bytes(result.optimizer_state_bytes) +
                           (result.sharding.optimizer_sharded()
                                ? fmt::format(" on rank 0 (ZeRO-{}: each rank holds its shard)",
                                              result.sharding.stage_number())
                                : std::string(" per rank (every rank holds all of it)")));
  }
  if (result.parameter_bytes > 0) {
    const PeakMemory& peak = result.peak_memory;
    lines.emplace_back(
        "memory",
        fmt::format(
            "parameters {}, gradients {}{} per rank; peak {} {} (rank 0{})",
            human_bytes(result.parameter_bytes), human_bytes(result.gradient_bytes),
            result.sharding.parameters_sharded()
                ? fmt::format(", largest unit gathered {}", human_bytes(result.largest_unit_bytes))
                : std::string(),
            human_bytes(peak.bytes), peak.on_gpu ? "allocated on the GPU" : "resident",
            peak.shared_bytes > 0 ? fmt::format("; {} of it in memory the node's ranks share",
                                                human_bytes(peak.shared_bytes))
                                  : std::string()));
  }
  if (result.best_eval) {
    const auto& [best, step] = *result.best_eval;
    lines.emplace_back("best eval",
                       describe_eval(best, info.task) + fmt::format(" at step {}", step));
  }
  return lines;
}

// Where the run's files are, and what writing the checkpoints cost.
SummaryLines file_lines(const Config& config, const RunResult& result,
                        const std::string& metrics_path) {
  SummaryLines lines{{"metrics", metrics_path},
                     {"log", config.run.dir + "/log.txt"},
                     {"config", config.run.dir + "/config.cfg"}};
  if (const std::string latest = latest_checkpoint(config.run.dir);
      config.checkpoint.every > 0 || !latest.empty()) {
    lines.emplace_back(
        "checkpoints",
        checkpoints_dir(config.run.dir).string() +
            (latest.empty()
                 ? ""
                 : " (latest: " + std::filesystem::path(latest).filename().string() + ")"));
  }
  if (result.checkpoints.count > 0) {
    const CheckpointTimes& c = result.checkpoints;
    lines.emplace_back(
        "checkpoint time",
        fmt::format("{} written; training stopped {:.3f} s for them, writing took {:.3f} s "
                    "({:.3f} s each)",
                    c.count, c.stall_s, c.write_s, c.write_s / static_cast<double>(c.count)));
  }
  return lines;
}

}  // namespace

std::string run_summary_text(const Config& config, const DatasetInfo& info, const RunResult& result,
                             const std::string& metrics_path) {
  std::string text = "summary";
  for (const SummaryLines& part : {progress_lines(config, info, result), result_lines(info, result),
                                   file_lines(config, result, metrics_path)}) {
    for (const auto& [label, value] : part) text += fmt::format("\n  {:<16}: {}", label, value);
  }
  return text;
}

int log_run_summary(const TrainingSetup& setup, const RunResult& result) {
  const Config& config = setup.config;
  spdlog::info("{}", run_summary_text(config, setup.data.train->info(), result,
                                      setup.files->metrics_path()));
  const std::string by = stopped_by(config, result);
  if (by.empty()) return 0;
  spdlog::info(
      "stopped by {} at step {} of {}; {} holds the state; run the same command with "
      "train.resume = auto to continue (exit code {})",
      by, result.end_step(), config.train.steps, result.last_checkpoint,
      static_cast<int>(ExitCode::kStopped));
  return static_cast<int>(ExitCode::kStopped);
}

}  // namespace ddpt
