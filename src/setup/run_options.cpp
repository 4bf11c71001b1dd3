#include "setup/run_options.hpp"

#include "config/batch_size.hpp"

namespace ddpt {

namespace {

OptimizerSpec optimizer_spec(const OptimConfig& optim) {
  OptimizerSpec spec;
  spec.type = optim.type;
  spec.lr = optim.lr;
  spec.momentum = optim.momentum;
  spec.nesterov = optim.nesterov;
  spec.weight_decay = optim.weight_decay;
  spec.beta1 = optim.beta1;
  spec.beta2 = optim.beta2;
  spec.eps = optim.eps;
  return spec;
}

GateOptions gate_options(const TrainConfig& train, const OptimConfig& optim) {
  GateOptions gate;
  gate.clip = optim.clip;
  gate.max_bad_steps = train.max_bad_steps;
  gate.step_checks = train.step_checks;
  gate.loss_scale = train.loss_scale;
  gate.scale_growth_interval = train.scale_growth_interval;
  gate.scale_backoff = train.scale_backoff;
  gate.spike = {train.spike_factor, train.spike_lr_factor, train.spike_window};
  return gate;
}

}  // namespace

LrScheduleSpec lr_schedule_spec(const OptimConfig& optim, int64_t steps) {
  LrScheduleSpec spec;
  spec.type = optim.schedule;
  spec.peak = optim.lr;
  spec.warmup = optim.warmup;
  spec.min_lr = optim.min_lr;
  spec.decay_end = optim.decay_steps > 0 ? optim.decay_steps : steps;
  spec.step_size = optim.step_size;
  spec.gamma = optim.gamma;
  return spec;
}

TrainerOptions trainer_options(const Config& config, int world_size) {
  const TrainConfig& train = config.train;
  TrainerOptions options;
  options.steps = train.steps;
  // train.batch_size = auto before the search found it: the search sets each trial's batch.
  options.batch =
      train.batch_size_auto && train.batch_size == 0 ? 1 : per_rank_batch(train, world_size);
  options.grad_accum = train.grad_accum;
  options.precision = train.precision;
  options.loss_chunk = train.loss_chunk;
  options.ema_decay = train.ema_decay;
  options.optimizer = optimizer_spec(config.optim);
  options.schedule = lr_schedule_spec(config.optim, train.steps);
  options.gate = gate_options(train, config.optim);
  options.first_bucket_mb = config.ddp.first_bucket_mb;
  options.bucket_mb = config.ddp.bucket_mb;
  options.shared_memory = config.ddp.shared_memory;
  return options;
}

RunOptions run_options(const Config& config, int world_size) {
  RunOptions options;
  options.step = trainer_options(config, world_size);
  options.checkpoint_every = config.checkpoint.every;
  options.keep_best = config.checkpoint.keep_best;
  options.eval_every = config.eval.every;
  options.eval_batch = eval_batch_size(config.eval, config.train, world_size);
  options.log_every = config.log.every;
  options.progress = config.log.progress;
  options.early_stopping = {config.train.patience, config.train.min_delta};
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
  options.retention = {config.checkpoint.keep, config.checkpoint.keep_best};
  options.async_checkpoints = config.checkpoint.async;
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
