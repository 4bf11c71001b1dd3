// The deck mapped onto each component's own options, in one place: the trainer, the run around it,
// the run's files and generation read these, not the whole deck (tests/lint/source_rules.py: only
// config/, setup/ and app/ include config/config.hpp).
#pragma once

#include "config/config.hpp"
#include "data/dataset.hpp"
#include "generate/generation.hpp"
#include "io/run_files.hpp"
#include "run/training_run.hpp"
#include "step/trainer.hpp"

namespace ddpt {

// [optim]'s schedule over `steps` (train.steps, where optim.decay_steps is 0).
LrScheduleSpec lr_schedule_spec(const OptimConfig& optim, int64_t steps);
// `world_size`: the ranks train.global_batch and eval.batch_size = 0 are divided over.
TrainerOptions trainer_options(const Config& config, int world_size);
RunOptions run_options(const Config& config, int world_size);
RunFilesOptions run_files_options(const Config& config);
// [generate], and the model's window and vocabulary: the built-in GPT's model.block and
// model.vocab where set, else those of the deck's data (`info`), which any model trained on.
GenerationOptions generation_options(const Config& config, const DatasetInfo& info);

}  // namespace ddpt
