// The block rank 0 prints when `train` ends: steps, wall time, throughput, where the steps' time
// went (rank 0's, and the ranks side by side), final loss, best evaluation and where the files
// are, aligned like the start banner.
#pragma once

#include <string>

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "run/run_result.hpp"
#include "setup/training_setup.hpp"

namespace ddpt {

// The summary's text; `metrics_path`: where metrics.h5 is.
std::string run_summary_text(const Config& config, const DatasetInfo& info, const RunResult& result,
                             const std::string& metrics_path);

// Logs the summary of `setup`'s run and, when a signal stopped it before train.steps, how to
// continue; returns the exit code: 0, or kStopped for such a stop.
int log_run_summary(const TrainingSetup& setup, const RunResult& result);

}  // namespace ddpt
