// A RunOutput that writes nothing: for tests that train without run.dir (no metrics.h5, no
// checkpoints; a deck with checkpoint.every set fails loudly instead of silently writing none).
#pragma once

#include <optional>
#include <stdexcept>

#include "run/training_run.hpp"

namespace ddpt::testing {

class DiscardedOutput : public RunOutput {
 public:
  void record(const StepRecord& /*record*/) override {}
  void record_eval(int64_t /*step*/, const EvalResult& /*result*/) override {}
  CheckpointWritten checkpoint(int64_t /*step*/, int64_t /*epoch*/,
                               std::optional<double> /*eval_loss*/) override {
    throw std::logic_error("DiscardedOutput: a checkpoint was due; the test gives no run.dir");
  }
  std::optional<CheckpointWritten> wait_for_checkpoint() override { return std::nullopt; }
  void prepare_checkpoint_memory() override {}
};

}  // namespace ddpt::testing
