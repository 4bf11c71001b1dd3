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

GenerationOptions generation_options(const Config& config, const DatasetInfo& info) {
  const GenerateConfig& g = config.generate;
  GenerationOptions options;
  options.sampling = {g.temperature, g.top_k, g.top_p, g.seed};
  options.max_new_tokens = g.max_new_tokens;
  options.stop = parse_int_list("generate.stop", g.stop, /*minimum=*/0);
  options.batch_size = g.batch_size;
  const bool gpt = config.model.type == ModelType::kGpt;
  options.context = gpt && config.model.block > 0 ? config.model.block
                    : info.sample_shape.empty()   ? 0
                                                  : info.sample_shape[0];
  options.vocab = gpt && config.model.vocab > 0 ? config.model.vocab : info.outputs;
  options.choices = info.outputs > 0 && info.outputs < options.vocab ? info.outputs : options.vocab;
  return options;
}

}  // namespace ddpt
