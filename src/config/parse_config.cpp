#include "config/parse_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/ddp_defaults.hpp"
#include "config/deck_text.hpp"
#include "config/int_list.hpp"
#include "config/option_table.hpp"
#include "util/error.hpp"

namespace po = boost::program_options;

namespace ddpt {
namespace {

// The single option table. Defaults are the values Config's fields start with.
OptionTable make_table(Config& c) {
  OptionTable t("Options (deck: [section] key = value; command line: --section.key=value)");
  t.add("run.dir", &c.run.dir, "run directory: log.txt and config.cfg are written here")
      .add("run.seed", &c.run.seed, "seed for initialisation, data and data order")
      .add_choice(
          "data.type", &c.data.type,
          "dataset: synthetic (teacher-labelled Gaussian inputs, in memory) | "
          "synthetic_regression (the same inputs, data.outputs noisy teacher outputs as "
          "targets, MSE) | synthetic_images "
          "(noisy, shifted class patterns [channels, size, size], in memory) | synthetic_tokens "
          "(data.samples windows of data.block tokens from a random sparse Markov chain over "
          "data.vocab, in memory) | hdf5 (inputs and targets arrays in data.path, rows read on "
          "demand) | tokens (a 1-D token id array in data.path, windows of data.block)")
      .add("data.samples", &c.data.samples, "synthetic: number of samples", at_least(1))
      .add("data.features", &c.data.features, "synthetic: input features per sample", at_least(1))
      .add("data.classes", &c.data.classes,
           "number of classes (hdf5: used when the targets have no 'classes' attribute)",
           at_least(2))
      .add("data.teacher_hidden", &c.data.teacher_hidden,
           "synthetic: hidden width of the random teacher network that labels the data",
           at_least(1))
      .add("data.outputs", &c.data.outputs, "synthetic_regression: targets per sample", at_least(1))
      .add("data.channels", &c.data.channels, "synthetic_images: channels per image", at_least(1))
      .add("data.image_size", &c.data.image_size, "synthetic_images: height and width in pixels",
           at_least(4))
      .add("data.path", &c.data.path, "hdf5, tokens: the HDF5 file (see `ddptrain make-data`)")
      .add("data.inputs", &c.data.inputs, "hdf5: name of the inputs dataset [samples, ...]")
      .add("data.targets", &c.data.targets,
           "hdf5: name of the targets dataset: [samples] integer labels (classification) or "
           "[samples(, k)] floats (regression)")
      .add("data.val_inputs", &c.data.val_inputs,
           "hdf5: validation inputs dataset; empty = none (or data.val_fraction)")
      .add("data.val_targets", &c.data.val_targets, "hdf5: validation targets dataset")
      .add("data.tokens", &c.data.tokens, "tokens: name of the 1-D token id dataset")
      .add("data.val_tokens", &c.data.val_tokens,
           "tokens: validation token dataset; empty = none (or data.val_fraction)")
      .add("data.block", &c.data.block, "tokens: window (context) length in tokens", at_least(1))
      .add("data.stride", &c.data.stride,
           "tokens: tokens between window starts; 0 = data.block (disjoint windows)", at_least(0))
      .add("data.vocab", &c.data.vocab,
           "tokens: vocabulary size, if the token dataset has no 'vocab' attribute; "
           "synthetic_tokens: the vocabulary (required)",
           at_least(0))
      .add("data.val_fraction", &c.data.val_fraction,
           "fraction of the rows (the last ones) held out for validation when no validation "
           "datasets are named",
           in_unit_interval())
      .add("data.prefetch", &c.data.prefetch,
           "training batches read ahead by a background thread while a step computes (and, on "
           "GPUs, pinned for an asynchronous copy); 0 = each batch is read when its step needs it",
           between(0, 64))
      .add("data.tokenizer", &c.data.tokenizer,
           "directory with GPT-2's encoder.json + vocab.bpe (or vocab.json + merges.txt), the "
           "tokenizer of generate --prompt's text; empty: text is bytes (vocabulary 256)")
      .add_choice(
          "model.type", &c.model.type,
          "model: mlp | cnn (ResNet-style, images [C, H, W]) | gpt (decoder-only transformer, "
          "token windows) | torchscript (a scripted PyTorch module from model.path)")
      .add("model.hidden", &c.model.hidden, "MLP hidden layer widths, comma separated")
      .add("model.channels", &c.model.channels,
           "CNN: channels of each stage, comma separated; every stage after the first halves "
           "the height and width")
      .add("model.blocks", &c.model.blocks, "CNN: residual blocks per stage", at_least(1))
      .add("model.n_layer", &c.model.n_layer, "GPT: transformer blocks", at_least(1))
      .add("model.n_head", &c.model.n_head, "GPT: attention heads (must divide model.n_embd)",
           at_least(1))
      .add("model.n_embd", &c.model.n_embd, "GPT: embedding width", at_least(1))
      .add("model.block", &c.model.block,
           "GPT: longest context (rows of the position table); 0 = data.block", at_least(0))
      .add("model.vocab", &c.model.vocab,
           "GPT: token embedding rows (e.g. 50304, GPT-2's 50257 padded to a multiple of 64); "
           "0 = the data's vocabulary",
           at_least(0))
      .add("model.dropout", &c.model.dropout,
           "GPT: dropout probability on embeddings, attention weights and residual branches",
           in_unit_interval())
      .add("model.tie", &c.model.tie,
           "GPT: the output head reuses the token embedding matrix (as GPT-2)")
      .add("model.path", &c.model.path, "TorchScript model file (model.type = torchscript)")
      .add("model.init", &c.model.init,
           "weights to start from (then a fresh optimizer from step 0): a .safetensors file, a "
           "directory holding model.safetensors or Hugging Face's shards and "
           "model.safetensors.index.json, or a ddptrain checkpoint; GPT-2's names and "
           "layout for model.type = gpt, the module's own names for torchscript; under "
           "ddp.zero = 3 each rank reads only its own slices (of safetensors, not a checkpoint)")
      .add("model.init_skip", &c.model.init_skip,
           "tensors model.init leaves as initialised (a new head, a resized layer): shell globs "
           "on the model's tensor names, comma separated (e.g. 'lm_head.*'); the file need not "
           "hold them and what it holds of them is not read")
      .add("model.activation_checkpointing", &c.model.activation_checkpointing,
           "built-in models: keep only each block's input in forward and compute the block "
           "again in backward (GPT: each transformer block; CNN: each residual block; MLP: each "
           "hidden layer): less memory for activations, about one more forward of time; the "
           "results are the same bit for bit")
      .add("model.freeze", &c.model.freeze,
           "parameters not to train: shell globs on parameter names, comma separated (e.g. "
           "'0.*'); frozen parameters are neither bucketed nor communicated")
      .add_count_or_word("train.batch_size", &c.train.batch_size, &c.train.batch_size_auto, "auto",
                         "samples per rank per micro-step, or auto (GPUs: the largest that fits in "
                         "GPU memory, found by trial steps before training and printed in the "
                         "banner)",
                         1)
      .add("train.global_batch", &c.train.global_batch,
           "samples per optimizer step over all ranks; if set, batch_size = global_batch / "
           "(ranks x grad_accum), which must divide evenly (keeps a run the same on any rank "
           "count); 0 = use batch_size",
           at_least(0))
      .add("train.grad_accum", &c.train.grad_accum,
           "micro-steps per optimizer step (gradients are communicated on the last one only)",
           at_least(1))
      .add("train.steps", &c.train.steps, "optimizer steps to run", at_least(1))
      .add("train.threads", &c.train.threads,
           "intra-op threads per rank; 0 = cores available / ranks on the node", at_least(0))
      .add("train.resume", &c.train.resume,
           "resume from: none | auto (newest complete checkpoint in run.dir) | a checkpoint file")
      .add("train.max_bad_steps", &c.train.max_bad_steps,
           "a step whose averaged gradients hold NaN or inf is skipped by every rank; this many "
           "in a row stop the run with exit code 4 (nothing more is saved)",
           at_least(1))
      .add_choice(
          "train.step_checks", &c.train.step_checks,
          "where each step's finite check and clipping (optim.clip) are decided: host (the "
          "gradient norm read back every step; a skipped step is warned of at once) | device "
          "(on the step's device, read back only at metrics rows and checkpoints: a GPU never "
          "waits for the host inside a step; skipped steps are warned of at the row; AdamW "
          "without ZeRO-1, fp16 or the spike guard) | auto (device on GPUs where it applies, "
          "else host)")
      .add("train.ema_decay", &c.train.ema_decay,
           "keep an exponential moving average of the weights with this decay (e.g. 0.999), "
           "used for evaluation, eval and predict, and saved in checkpoints; 0 = off",
           in_unit_interval())
      .add("train.loss_chunk", &c.train.loss_chunk,
           "next-token models with a linear head (gpt): compute the training loss with the "
           "head's logits this many tokens at a time, in forward and again in backward, instead "
           "of all of them at once (saves their memory: vocab x tokens floats); 0 = all at once",
           at_least(0))
      .add("train.patience", &c.train.patience,
           "early stopping: stop after this many evaluations (eval.every) in a row without the "
           "validation loss improving on the best by train.min_delta; 0 = off",
           at_least(0))
      .add("train.min_delta", &c.train.min_delta,
           "early stopping: the smallest decrease of the validation loss that counts as better",
           non_negative())
      .add("train.deterministic", &c.train.deterministic,
           "ask torch for deterministic algorithms (run.seed already fixes initialisation, data "
           "order and dropout; this also pins the kernels, at some speed cost on GPUs)")
      .add_choice(
          "train.precision", &c.train.precision,
          "fp32 | bf16 (autocast: matrix products in bfloat16, weights, gradients and optimizer "
          "in fp32; CPU and CUDA) | fp16 (CUDA only: autocast to float16 with dynamic loss "
          "scaling)")
      .add("train.loss_scale", &c.train.loss_scale, "fp16: initial loss scale", positive())
      .add("train.scale_growth_interval", &c.train.scale_growth_interval,
           "fp16: steps without overflow before the loss scale doubles", at_least(1))
      .add("train.scale_backoff", &c.train.scale_backoff,
           "fp16: factor applied to the loss scale after an overflow (the step is skipped and "
           "counted in skipped_steps)",
           in_unit_interval())
      .add("train.spike_factor", &c.train.spike_factor,
           "loss-spike guard: a step whose loss (mean over ranks) exceeds this multiple of the "
           "running mean is skipped on every rank and the learning rate is multiplied by "
           "train.spike_lr_factor; 0 = off (on: one scalar all-reduce per step)",
           non_negative())
      .add("train.spike_lr_factor", &c.train.spike_lr_factor,
           "loss-spike guard: factor on the learning rate after each spike", positive())
      .add("train.spike_window", &c.train.spike_window,
           "loss-spike guard: steps in the running mean (the guard starts once it is full)",
           at_least(2))
      .add_choice("optim.type", &c.optim.type, "optimizer: sgd | adamw")
      .add("optim.lr", &c.optim.lr, "peak learning rate (after warmup, before decay)", positive())
      .add("optim.momentum", &c.optim.momentum, "SGD momentum", in_unit_interval())
      .add("optim.nesterov", &c.optim.nesterov, "SGD: Nesterov momentum")
      .add("optim.weight_decay", &c.optim.weight_decay,
           "weight decay (AdamW: decoupled); biases and norm weights (1-D parameters) are not "
           "decayed",
           non_negative())
      .add("optim.beta1", &c.optim.beta1, "AdamW beta1", in_unit_interval())
      .add("optim.beta2", &c.optim.beta2, "AdamW beta2", in_unit_interval())
      .add("optim.eps", &c.optim.eps, "AdamW epsilon", positive())
      .add_choice("optim.schedule", &c.optim.schedule,
                  "learning rate schedule after warmup: constant | cosine (to optim.min_lr at "
                  "optim.decay_steps) | step (x optim.gamma every optim.step_size steps)")
      .add("optim.warmup", &c.optim.warmup,
           "steps of linear warmup: step k (from 0) uses lr x (k + 1) / warmup", at_least(0))
      .add("optim.min_lr", &c.optim.min_lr, "cosine: final learning rate", non_negative())
      .add("optim.decay_steps", &c.optim.decay_steps,
           "cosine: step at which min_lr is reached (counted from 0, warmup included); "
           "0 = train.steps",
           at_least(0))
      .add("optim.step_size", &c.optim.step_size, "step: steps between decays", at_least(1))
      .add("optim.gamma", &c.optim.gamma, "step: factor applied at each decay", positive())
      .add("optim.clip", &c.optim.clip,
           "clip gradients to this global L2 norm (the unclipped norm is logged); 0 = off",
           non_negative())
      .add("ddp.bucket_mb", &c.ddp.bucket_mb, "gradient bucket cap in MiB", positive())
      .add("ddp.first_bucket_mb", &c.ddp.first_bucket_mb,
           "cap of the first bucket in MiB (small, so communication starts early)", positive())
      .add_choice("ddp.backend", &c.ddp.backend,
                  "communication backend: auto (nccl on GPUs, else mpi) | mpi | nccl")
      .add_choice(
          "ddp.compress", &c.ddp.compress,
          "precision of gradients on the wire: none (fp32) | bf16 | fp16 (halves the bytes; "
          "the sum is accumulated in that precision)")
      .add("ddp.zero", &c.ddp.zero,
           "ZeRO stage: 0 = every rank holds the whole optimizer state | 1 = each rank holds "
           "and updates 1/N of it (gradients reduce-scattered, parameters all-gathered; with "
           "ddp.shared_memory on one node, one shared copy of the parameters instead) | 2 = the "
           "same, and each rank holds 1/N of the gradients too (reduced at every micro-step) | 3 = "
           "the same, and each rank holds 1/N of the parameters too: each block's are gathered "
           "while it runs (forward and backward) and released after",
           between(0, kHighestZeroStage))
      .add_choice("ddp.prefetch", &c.ddp.prefetch,
                  "ddp.zero = 3: on = gather the next block's parameters while the current block "
                  "computes | off = each block's when it starts | auto = on with nccl, off with "
                  "mpi (its communication thread would take a core from the compute)")
      .add("ddp.shared_memory", &c.ddp.shared_memory,
           "mpi backend with every rank on one node: gradient buckets live in memory the ranks "
           "share and are summed (ZeRO-1: reduce-scattered) there, and ZeRO-3's blocks are "
           "gathered into one copy there, without messages | false: MPI's collectives")
      .add("dist.timeout_s", &c.dist.timeout_s,
           "seconds a rank may wait in a collective or a checkpoint phase; past it the job "
           "aborts with exit code 5, naming the collective, the step and the ranks that did not "
           "arrive",
           positive())
      .add("dist.straggler_factor", &c.dist.straggler_factor,
           "a rank slower in forward + backward than the median of the ranks by this factor, in 3 "
           "metrics rows running, is named in a warning line (once; again if it recovers and "
           "relapses); 0 = never",
           off_or_above(1))
      .add("dist.hang_factor", &c.dist.hang_factor,
           "after the first 3 steps, a training collective still waiting after this many times "
           "the slowest recent step (at least dist.hang_floor_s) is a hang: exit code 5, with "
           "each live rank's flight records in run.dir/flight and their analysis, unless a rank "
           "is writing or reading a checkpoint or evaluating (those wait up to dist.timeout_s, as "
           "long as every rank answers: see dist.hang_floor_s); 0 = dist.timeout_s only",
           off_or_above(1))
      .add("dist.hang_floor_s", &c.dist.hang_floor_s,
           "the shortest wait dist.hang_factor may call a hang, in seconds; past it, whatever "
           "waits (an evaluation, a checkpoint write too), a rank that gives no answer is "
           "stopped, dead or hung outside ddptrain: a hang (with dist.hang_factor > 0)",
           positive())
      .add("dist.flight_records", &c.dist.flight_records,
           "collectives each rank remembers (sequence number, operation, bytes, times, state) "
           "for the analysis of a hang; 0 = none",
           at_least(0))
      .add("log.every", &c.log.every, "steps between progress lines (and metrics.h5 rows)",
           at_least(1))
      .add_choice(
          "log.progress", &c.log.progress,
          "auto (a live bar with ETA when rank 0 writes to a terminal, plain lines otherwise, "
          "e.g. in SLURM logs) | bar | lines; log.txt always gets the lines")
      .add("checkpoint.every", &c.checkpoint.every,
           "steps between checkpoints in run.dir/checkpoints (also after the last step); 0 = none",
           at_least(0))
      .add("checkpoint.keep", &c.checkpoint.keep, "newest checkpoints kept", at_least(1))
      .add("checkpoint.keep_best", &c.checkpoint.keep_best,
           "also keep the checkpoint with the lowest validation loss (checkpoints/best); "
           "evaluates at every checkpoint")
      .add("checkpoint.async", &c.checkpoint.async,
           "write checkpoints in the background: training stops only to copy the state to host "
           "memory; one write at a time, and the run waits for it before it ends")
      .add("eval.every", &c.eval.every,
           "steps between evaluations on the validation split (all ranks share it); 0 = none",
           at_least(0))
      .add("eval.batch_size", &c.eval.batch_size,
           "samples per rank per evaluation batch; 0 = train.batch_size", at_least(0))
      .add("generate.max_new_tokens", &c.generate.max_new_tokens,
           "ddptrain generate: tokens generated per prompt at most", at_least(1))
      .add("generate.temperature", &c.generate.temperature,
           "0 = greedy (the most likely token); above 0.001, logits divided by it and sampled",
           off_or_above(0.001))
      .add("generate.top_k", &c.generate.top_k,
           "sample among the k most likely tokens only; 0 = all", at_least(0))
      .add("generate.top_p", &c.generate.top_p,
           "sample among the most likely tokens whose probabilities sum to this (nucleus); 1 = "
           "all",
           a_fraction_above_zero())
      .add("generate.seed", &c.generate.seed,
           "keys every draw with the row and the position: the same tokens on any rank count")
      .add("generate.stop", &c.generate.stop,
           "token ids that end a row, e.g. 10 or 10,0 (kept in the output); empty = none")
      .add_count_or_word("generate.batch_size", &c.generate.batch_size, &c.generate.batch_size_auto,
                         "auto",
                         "prompts of one length run in one forward; auto: the most that fit in GPU "
                         "memory, found by trials",
                         1);
  return t;
}

void check_deck_readable(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw ConfigError("deck '" + path + "' not found");
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError("deck '" + path + "' is a directory, not a file");
  std::ifstream probe(path);
  if (!probe) throw ConfigError("deck '" + path + "' cannot be read");
}

// Boost's message, where it came from, and for an unknown option the names it may have meant
// (a key in the wrong section, a typo).
std::string describe(const po::error& e, const std::string& source, const OptionTable& table) {
  std::string message = escape_bytes(e.what()) + (source.empty() ? "" : " (in " + source + ")");
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e)) {
    const std::vector<std::string> similar =
        similar_options(unknown->get_option_name(), table.names());
    if (!similar.empty())
      message += "; did you mean '" + fmt::format("{}", fmt::join(similar, "' or '")) + "'?";
  }
  return message;
}

// Options that only make sense together.
void check_data_options(const DataConfig& data) {
  if ((data.type == DataType::kHdf5 || data.type == DataType::kTokens) && data.path.empty()) {
    throw ConfigError(std::string("option 'data.path' is required when data.type = ") +
                      choice_name(data.type));
  }
  if (data.val_inputs.empty() != data.val_targets.empty()) {
    throw ConfigError("options 'data.val_inputs' and 'data.val_targets' go together");
  }
}

}  // namespace

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text,
                                    int64_t minimum) {
  std::vector<int64_t> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    while (used < item.size() && item[used] == ' ') ++used;
    if (used == 0 || used != item.size() || value < minimum) {
      throw ConfigError("option '" + option + "' = " + text +
                        (minimum == 1 ? ": expected positive integers separated by commas"
                                      : fmt::format(": expected integers of at least {} separated "
                                                    "by commas",
                                                    minimum)));
    }
    values.push_back(value);
  }
  return values;
}

namespace {

// Options that only make sense together, or not at all together.
void check_option_pairs(const Config& config) {
  if (config.train.batch_size_auto && config.train.global_batch > 0) {
    throw ConfigError(
        "options 'train.batch_size' = auto and 'train.global_batch' exclude each other: auto "
        "finds the batch per rank from GPU memory, global_batch derives it from the rank count");
  }
  if (config.train.patience > 0 && config.eval.every == 0) {
    throw ConfigError("option 'train.patience' needs eval.every > 0 (it counts evaluations)");
  }
  if (config.checkpoint.keep_best && config.checkpoint.every == 0) {
    throw ConfigError("option 'checkpoint.keep_best' needs checkpoint.every > 0");
  }
  if (config.model.type == ModelType::kTorchScript && config.model.path.empty()) {
    throw ConfigError("option 'model.path' is required when model.type = torchscript");
  }
  if (!config.model.init_skip.empty() && config.model.init.empty()) {
    throw ConfigError("option 'model.init_skip' needs model.init (the weights it leaves out of)");
  }
}

}  // namespace

namespace {

// The command line's options into `values`, first: po::store keeps the first value stored, so
// overrides win over the deck. Returns the positional arguments (the deck).
std::vector<std::string> store_command_line(const std::vector<std::string>& args,
                                            const OptionTable& table, po::variables_map& values) {
  po::options_description positional_holder;
  // Read back from `values` below, not bound to a variable: po::notify runs after this returns.
  positional_holder.add_options()("deck", po::value<std::vector<std::string>>());
  po::options_description everything;
  everything.add(table.description()).add(positional_holder);
  po::positional_options_description deck_position;
  deck_position.add("deck", -1);
  try {
    po::store(
        po::command_line_parser(args)
            .options(everything)
            .positional(deck_position)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        values);
  } catch (const po::error& e) {
    throw ConfigError(describe(e, "command line", table));
  }
  if (values.count("deck") == 0) return {};
  return values["deck"].as<std::vector<std::string>>();
}

// The deck's options into `values`, under the command line's.
void store_deck(const std::string& path, const OptionTable& table, po::variables_map& values) {
  check_deck_readable(path);
  try {
    std::istringstream deck(read_deck_text(path));
    po::store(po::parse_config_file(deck, table.description(), /*allow_unregistered=*/false),
              values);
  } catch (const po::error& e) {
    throw ConfigError(describe(e, path, table));
  }
}

// What the model and data options must satisfy beyond each option's own range.
void check_model_and_data(Config& config) {
  if (config.model.type == ModelType::kMlp) parse_int_list("model.hidden", config.model.hidden);
  if (config.model.type == ModelType::kCnn) parse_int_list("model.channels", config.model.channels);
  parse_int_list("generate.stop", config.generate.stop, /*minimum=*/0);
  if (config.model.type == ModelType::kGpt && config.model.n_embd % config.model.n_head != 0) {
    throw ConfigError("option 'model.n_head' = " + std::to_string(config.model.n_head) +
                      " must divide model.n_embd = " + std::to_string(config.model.n_embd));
  }
  if (config.data.type == DataType::kSyntheticTokens && config.data.vocab < 2) {
    throw ConfigError(
        "option 'data.vocab' (at least 2) is required when data.type = "
        "synthetic_tokens");
  }
  check_data_options(config.data);
}

}  // namespace

Config parse_config(const std::vector<std::string>& args, bool deck_optional) {
  check_arguments_are_utf8(args);
  check_arguments_have_no_placeholders(args);
  Config config;
  OptionTable table = make_table(config);
  po::variables_map values;
  const std::vector<std::string> positional = store_command_line(args, table, values);
  if (positional.size() > 1) {
    throw ConfigError("expected one deck, got " + std::to_string(positional.size()) + " ('" +
                      positional[0] + "', '" + positional[1] + "', ...)");
  }
  if (positional.empty() && !deck_optional) {
    throw ConfigError("no deck given: usage: ddptrain train DECK [--section.key=value ...]");
  }
  if (!positional.empty()) {
    config.deck_path = positional[0];
    store_deck(config.deck_path, table, values);
  }
  try {
    po::notify(values);
  } catch (const po::error& e) {
    throw ConfigError(describe(e, config.deck_path, table));
  }
  table.validate();
  check_model_and_data(config);
  check_option_pairs(config);
  config.resolved_text = table.to_ini();
  return config;
}

std::string options_help() {
  Config defaults;
  std::ostringstream out;
  out << make_table(defaults).description();
  return out.str();
}

}  // namespace ddpt
