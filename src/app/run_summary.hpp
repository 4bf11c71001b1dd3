// The block rank 0 prints when `train` ends: steps, wall time, throughput, where the steps' time
// went (rank 0's, and the ranks side by side), final loss, best evaluation and where the files
// are, aligned like the start banner.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/rank_steps.hpp"
#include "config/config.hpp"
#include "data/dataset.hpp"
#include "train/evaluate.hpp"
#include "train/trainer.hpp"
#include "train/training_run.hpp"

namespace ddpt {

struct RunOutcome {
  const TrainSummary* summary = nullptr;
  int64_t resume_step = 0;                                  // 0: a fresh start
  std::optional<std::pair<EvalResult, int64_t>> best_eval;  // this run's best, and its step
  std::string metrics_path;
  std::string stopped_by;  // "SIGUSR1" ... when a signal stopped the run before train.steps
  int64_t optimizer_state_bytes = 0;  // held by each rank at the end
  bool optimizer_sharded = false;     // ZeRO-1 at work: that is rank 0's shard
  CheckpointTimes checkpoints;
  std::vector<RankSteps> ranks;  // every rank's steady steps, by rank (app/rank_steps.hpp)
};

std::string run_summary_text(const Config& config, const DatasetInfo& info,
                             const RunOutcome& outcome);

}  // namespace ddpt
