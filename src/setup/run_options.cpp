#include "setup/run_options.hpp"

namespace ddpt {

TrainerOptions trainer_options(const Config& config) {
  TrainerOptions options;
  options.train = config.train;
  options.optim = config.optim;
  options.first_bucket_mb = config.ddp.first_bucket_mb;
  options.bucket_mb = config.ddp.bucket_mb;
  options.shared_memory = config.ddp.shared_memory;
  return options;
}

RunOptions run_options(const Config& config) {
  RunOptions options;
  options.step = trainer_options(config);
  options.checkpoint = config.checkpoint;
  options.eval = config.eval;
  options.log = config.log;
  options.seed = config.run.seed;
  options.data_prefetch = config.data.prefetch;
  options.straggler_factor = config.dist.straggler_factor;
  return options;
}

RunFilesOptions run_files_options(const Config& config) {
  RunFilesOptions options;
  options.dir = config.run.dir;
  options.resume = config.train.resume;
  options.log_every = config.log.every;
  options.checkpoint = config.checkpoint;
  options.deck_path = config.deck_path;
  options.resolved_text = config.resolved_text;
  return options;
}

}  // namespace ddpt
