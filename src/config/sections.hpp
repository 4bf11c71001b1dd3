// The deck's sections, one struct each ([run], [data], [model], ...), with their defaults.
// A component reads only the sections (or the fields of them) setup/ hands it; the whole deck,
// config/config.hpp's Config, is seen by config/, setup/ and app/ alone (tests/lint/
// source_rules.py), so that what a component reads is in its constructor's signature.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/choices.hpp"
#include "config/ddp_defaults.hpp"

namespace ddpt {

struct RunConfig {
  std::string dir = "runs/default";  // where log.txt and config.cfg go
  int64_t seed = 1234;               // fixes initialisation, data and data order
};

struct DataConfig {
  DataType type = DataType::kSynthetic;
  int64_t samples = 16384;        // synthetic: dataset size
  int64_t features = 256;         // synthetic: input width
  int64_t classes = 10;           // labels (hdf5: unless the targets carry a `classes` attribute)
  int64_t teacher_hidden = 64;    // synthetic: hidden width of the teacher that labels the data
  int64_t outputs = 1;            // synthetic_regression: targets per sample
  int64_t channels = 3;           // synthetic_images: channels per image
  int64_t image_size = 16;        // synthetic_images: height = width in pixels
  std::string path;               // hdf5, tokens: the HDF5 file
  std::string inputs = "inputs";  // hdf5: dataset names in data.path
  std::string targets = "targets";
  std::string val_inputs;  // hdf5: validation datasets (empty: none, or data.val_fraction)
  std::string val_targets;
  std::string tokens = "tokens";  // tokens: the 1-D token id array, and its validation part
  std::string val_tokens;
  int64_t block = 64;         // tokens: window length (context)
  int64_t stride = 0;         // tokens: offset between windows; 0 = block (disjoint windows)
  int64_t vocab = 0;          // tokens: vocabulary size if the file has no `vocab` attribute
  double val_fraction = 0.0;  // the last fraction of the rows held out for validation
  int64_t prefetch = 1;       // batches read ahead by a background thread; 0 = none
  std::string tokenizer;      // GPT-2's tokenizer files (generate --prompt); empty: bytes
};

struct ModelConfig {
  ModelType type = ModelType::kMlp;
  std::string hidden = "256,256";  // MLP hidden widths, comma separated
  std::string channels =
      "16,32,64";         // CNN: width of each stage (stages after the first halve H, W)
  int64_t blocks = 1;     // CNN: residual blocks per stage
  int64_t n_layer = 4;    // GPT: transformer blocks
  int64_t n_head = 4;     // GPT: attention heads (divides n_embd)
  int64_t n_embd = 128;   // GPT: width
  int64_t block = 0;      // GPT: longest context; 0 = data.block
  int64_t vocab = 0;      // GPT: embedding rows; 0 = the data's vocabulary
  double dropout = 0.0;   // GPT: dropout on embeddings, attention and residuals
  bool tie = true;        // GPT: the output head shares the token embedding
  std::string path;       // TorchScript file (model.type = torchscript)
  std::string init;       // weights to start from: a .safetensors file or directory, a checkpoint
  std::string init_skip;  // tensors model.init leaves as initialised: globs, comma separated
  std::string freeze;     // parameters not trained: globs on names, comma separated
  bool activation_checkpointing = false;  // built-in models: blocks recomputed in backward
};

struct TrainConfig {
  int64_t batch_size = 32;       // samples per rank per micro-step (auto: 0 until train finds it)
  bool batch_size_auto = false;  // train.batch_size = auto: the largest that fits in GPU memory
  int64_t global_batch = 0;  // if > 0: samples per optimizer step over all ranks (sets batch_size)
  int64_t grad_accum = 1;    // micro-steps per optimizer step
  int64_t steps = 200;       // optimizer steps
  int64_t threads = 0;       // intra-op threads per rank; 0 = cores available / local ranks
  std::string resume = "none";  // none | auto (newest in run.dir) | path of a checkpoint
  int64_t max_bad_steps = 10;   // consecutive steps with non-finite gradients before exit 4
  StepChecks step_checks = StepChecks::kAuto;  // where the finite check and clipping decide
  double ema_decay = 0.0;                      // exponential moving average of the weights; 0 = off
  int64_t loss_chunk = 0;      // GPT: the loss's logits this many tokens at a time; 0 = all at once
  int64_t patience = 0;        // early stopping: evaluations without improvement; 0 = off
  double min_delta = 0.0;      // early stopping: the improvement of the eval loss that counts
  bool deterministic = false;  // ask torch for deterministic algorithms
  Precision precision = Precision::kFp32;  // bf16: autocast; fp16: CUDA, loss scaling
  double loss_scale = 65536.0;             // fp16: initial loss scale
  int64_t scale_growth_interval = 2000;    // fp16: good steps before the scale doubles
  double scale_backoff = 0.5;              // fp16: factor on the scale after an overflow
  double spike_factor = 0.0;     // skip a step whose loss exceeds this x the running mean; 0 = off
  double spike_lr_factor = 0.5;  // ...and multiply the learning rate by this
  int64_t spike_window = 50;     // steps in the running mean of the loss
};

struct CheckpointConfig {
  int64_t every = 0;       // steps between checkpoints; 0 = none (except the final one if set)
  int64_t keep = 3;        // newest checkpoints kept
  bool keep_best = false;  // also keep the checkpoint with the lowest validation loss
  bool async = false;      // write in the background from a host copy; training goes on
};

// `ddptrain generate`: how rows are continued (generate/sampling.hpp, generate/generation.hpp).
struct GenerateConfig {
  int64_t max_new_tokens = 64;   // tokens generated per prompt at most
  double temperature = 0.0;      // 0 = greedy (the most likely token)
  int64_t top_k = 0;             // sample among the k most likely tokens; 0 = all
  double top_p = 1.0;            // sample among the most likely tokens of this much mass; 1 = all
  int64_t seed = 1234;           // with the row and the position, keys every draw
  std::string stop;              // token ids that end a row ("10,0"); empty = none
  int64_t batch_size = 8;        // prompts per forward (auto: 0 until generate finds it)
  bool batch_size_auto = false;  // generate.batch_size = auto: the largest that fits in GPU memory
};

struct EvalConfig {
  int64_t every = 0;       // steps between evaluations on the validation split; 0 = none
  int64_t batch_size = 0;  // samples per rank per evaluation batch; 0 = train.batch_size
};

struct OptimConfig {
  OptimizerType type = OptimizerType::kAdamW;
  double lr = 1e-3;           // peak learning rate
  double momentum = 0.9;      // sgd
  bool nesterov = false;      // sgd
  double weight_decay = 0.0;  // not applied to biases and norm weights (1-D parameters)
  double beta1 = 0.9;         // adamw
  double beta2 = 0.999;
  double eps = 1e-8;
  LrScheduleType schedule = LrScheduleType::kConstant;  // each after optim.warmup
  int64_t warmup = 0;        // steps of linear warmup from lr / warmup to lr
  double min_lr = 0.0;       // cosine: the learning rate at the end of the decay
  int64_t decay_steps = 0;   // cosine: steps until min_lr (counted from step 0); 0 = train.steps
  int64_t step_size = 1000;  // step: steps between decays
  double gamma = 0.1;        // step: factor per decay
  double clip = 0.0;         // clip gradients to this global L2 norm; 0 = off
};

struct DdpConfig {
  // Gradient bucket caps in MiB. Defaults (config/ddp_defaults.hpp): PyTorch DDP's, with a small
  // first bucket so that communication starts early.
  double bucket_mb = kDefaultBucketMiB;
  double first_bucket_mb = kDefaultFirstBucketMiB;
  Backend backend = Backend::kAuto;
  WirePrecision compress = WirePrecision::kNone;  // precision of gradients on the wire
  int64_t zero =
      0;  // 1: ZeRO-1, optimizer state sharded over ranks; 2: gradients too; 3: parameters
  bool shared_memory = true;  // MPI, one node: gradient buckets summed in node-shared memory
  // ZeRO-3: the next unit's all-gather launched before the current unit computes (auto: with
  // NCCL, whose own stream overlaps it; not with MPI, whose thread would take a core from it).
  Prefetch prefetch = Prefetch::kAuto;
};

struct DistConfig {
  double timeout_s = 600;  // deadline of every collective and checkpoint phase, in seconds
  // A rank this much slower than the median in forward + backward, 3 metrics rows running, is
  // named (run/straggler_watch.hpp); 0: never.
  double straggler_factor = 1.2;
  // A training collective still waiting after hang_factor x the slowest recent step (at least
  // hang_floor_s) is a hang (comm/watchdog.hpp); 0: only timeout_s.
  double hang_factor = 5;
  double hang_floor_s = 30;
  int64_t flight_records = 256;  // collectives each rank remembers for a hang's analysis
};

struct LogConfig {
  int64_t every = 10;                               // steps between progress lines
  ProgressChoice progress = ProgressChoice::kAuto;  // auto: a bar on a terminal, else lines
};

}  // namespace ddpt
