// The deck mapped onto each training component's own options, in one place: the trainer, the run
// around it and the run's files read these, not the whole deck (tests/lint/source_rules.py: only
// config/, setup/ and app/ include config/config.hpp).
#pragma once

#include "config/config.hpp"
#include "io/run_files.hpp"
#include "run/training_run.hpp"
#include "step/trainer.hpp"

namespace ddpt {

TrainerOptions trainer_options(const Config& config);
RunOptions run_options(const Config& config);
RunFilesOptions run_files_options(const Config& config);

}  // namespace ddpt
