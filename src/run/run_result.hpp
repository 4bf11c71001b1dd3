// What a training run did, in one type: its metrics rows, its steps and time, where the steady
// steps' time went (on this rank and on every rank), its best evaluation, its checkpoints, the
// optimizer state it ended with, and whether a signal stopped it. TrainingRun fills it; the run
// summary prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddp/sharding_plan.hpp"
#include "run/evaluate.hpp"
#include "run/rank_steps.hpp"
#include "runtime/peak_memory.hpp"
#include "step/step_split.hpp"

namespace ddpt {

// One row of metrics.h5's /train: the steps since the previous row.
struct StepRecord {
  int64_t step = 0;  // 1-based: the number of optimizer steps done
  int64_t epoch = 0;
  double loss = 0;            // mean over all ranks and micro-steps
  double lr = 0;              // learning rate of the last step
  double grad_norm = 0;       // global L2 norm of the averaged gradients of the last step, before
                              // clipping
  double samples_per_s = 0;   // global, over the interval since the previous record
  double step_time_s = 0;     // mean over the interval
  double comm_wait_s = 0;     // mean time per step spent waiting for gradient all-reduces
  double data_wait_s = 0;     // mean time per step spent waiting for training batches
  int64_t skipped_steps = 0;  // steps skipped for non-finite gradients so far in this run
  double compute_s = 0;       // this rank's mean forward + backward per step over the interval
  // Every rank's compute_s, by rank (metrics.h5's /ranks/compute_s); empty on one rank.
  std::vector<double> rank_compute_s;
};

// Checkpoints of one run and what they cost.
struct CheckpointTimes {
  int64_t count = 0;
  double stall_s = 0;  // training stopped for them, in all
  double write_s = 0;  // their writes took, in all (with synchronous writes: the stall)
};

struct RunResult {
  std::vector<StepRecord> records;  // one per log interval
  int64_t first_step = 0;           // steps done before this run: 0, or the resumed checkpoint's
  int64_t steps = 0;                // steps this run did
  double seconds = 0;
  int64_t warmup_steps = 0;         // excluded from the steady-state throughput
  double steady_samples_per_s = 0;  // global
  StepSplit split;                  // this rank's steady steps, phase by phase
  // The split times the work itself: the device is the CPU, or the split was timed on the GPU.
  bool split_is_work = false;
  std::vector<RankSteps> ranks;  // every rank's steady steps, by rank (gathered at the end)
  std::optional<std::pair<EvalResult, int64_t>> best_eval;  // this run's best, and its step
  int stop_signal = 0;          // agreed by every rank; nonzero when a signal stopped the run
  std::string last_checkpoint;  // "" if none was written
  CheckpointTimes checkpoints;
  int64_t optimizer_state_bytes = 0;  // held by each rank at the end
  // Parameters held by each rank: the model's, frozen ones too (ZeRO-3: the rank's shard of the
  // trainable ones, and the frozen ones).
  int64_t parameter_bytes = 0;
  int64_t largest_unit_bytes = 0;  // ZeRO-3: the largest unit gathered whole while it runs
  int64_t gradient_bytes = 0;      // gradient memory on each rank (buckets, shards)
  PeakMemory peak_memory;          // rank 0's, at the end
  ShardingPlan sharding;           // what ZeRO sharded (rank 0's shard is the figures')

  int64_t end_step() const { return first_step + steps; }
};

}  // namespace ddpt
