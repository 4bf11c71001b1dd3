// ddptrain train DECK: the run set up from the deck (setup/training_setup.hpp), run
// (run/training_run.hpp), and its summary. Exit code 0, or kStopped when a signal stopped the
// run before train.steps with a checkpoint to continue from.
#include "app/commands.hpp"
#include "app/run_banner.hpp"
#include "app/run_summary.hpp"
#include "config/parse_config.hpp"
#include "setup/training_setup.hpp"

namespace ddpt {

int train_command(const std::vector<std::string>& args, MpiEnv& /*mpi*/) {
  const Config config = parse_config(args);
  const std::unique_ptr<TrainingSetup> setup = set_up_training(config, log_run_banner);
  const RunResult result = setup->run->run(*setup->files);
  return log_run_summary(*setup, result);
}

}  // namespace ddpt
