// ddptrain generate DECK --checkpoint PATH --input PROMPTS.h5 --output OUT.h5: every prompt of
// the input continued by the checkpoint's model (generate/generation.hpp), the batches handed to
// the ranks as they free up (comm/work_counter.hpp; in rounds where forwards run in lockstep), and
// the new tokens written collectively into one file in the prompts' order. With
// --prompt TEXT instead: one prompt, printed with its continuation: text as bytes, or as GPT-2's
// tokens where data.tokenizer names its files (data/bpe_tokenizer.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

#include "app/commands.hpp"
#include "comm/make_communicator.hpp"
#include "comm/watched_world.hpp"
#include "comm/work_counter.hpp"
#include "config/command_flags.hpp"
#include "config/deck_text.hpp"
#include "config/parse_config.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/prompts_file.hpp"
#include "generate/generation_batch_size.hpp"
#include "generate/row_words.hpp"
#include "io/generation_progress.hpp"
#include "io/generations_writer.hpp"
#include "setup/inference_model.hpp"
#include "setup/make_datasets.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "setup/test_faults.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/stop_signal.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {
namespace {

const char* kGenerateUsage =
    "ddptrain generate DECK --checkpoint PATH (--input PROMPTS.h5 --output OUT.h5 | --prompt "
    "TEXT) [--section.key=value]";

// What a deck must be for its checkpoint to generate: refused before anything is loaded.
void check_can_generate(const Config& config) {
  if (deck_data_info(config.data).task != Task::kNextToken) {
    throw ConfigError(
        "generate needs a next-token model (a deck with data.type = tokens or synthetic_tokens); "
        "this deck's model predicts rows: use ddptrain predict");
  }
}

// Text a terminal shows as it is: UTF-8 with its line breaks and tabs; other control bytes, and
// the whole text if it is not UTF-8, as \xNN.
std::string printable(const std::string& text) {
  if (first_invalid_utf8(text)) return escape_bytes(text);
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool control = (byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f;
    out += control ? fmt::format("\\x{:02x}", byte) : std::string(1, c);
  }
  return out;
}

// The tokenizer of --prompt's text (data.tokenizer; none: each byte a token), refused before
// anything is loaded where the model's vocabulary does not hold its ids.
std::optional<BpeTokenizer> prompt_tokenizer(const std::string& directory, int64_t vocab) {
  if (directory.empty()) {
    if (vocab == 256) return std::nullopt;
    throw ConfigError(fmt::format(
        "--prompt takes text for a byte-level model (vocabulary 256); this one has {}: name its "
        "tokenizer (data.tokenizer = DIR), or write a prompts file of token ids and use "
        "--input/--output",
        vocab));
  }
  BpeTokenizer tokenizer = BpeTokenizer::load(directory);
  if (vocab < tokenizer.size()) {
    throw ConfigError(fmt::format(
        "--prompt: the tokenizer of data.tokenizer = {} has {} ids, more than this model's "
        "vocabulary of {}: name the model's own tokenizer",
        directory, tokenizer.size(), vocab));
  }
  return tokenizer;
}

// Text as token ids: the tokenizer's, or each byte an id.
std::vector<int64_t> prompt_ids(const std::string& text,
                                const std::optional<BpeTokenizer>& tokenizer) {
  if (tokenizer) return tokenizer->encode(text);
  std::vector<int64_t> bytes;
  for (const char c : text) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

// Token ids as text: the tokenizer's decoding, or each id a byte.
std::string continuation_text(const std::vector<int64_t>& ids,
                              const std::optional<BpeTokenizer>& tokenizer) {
  if (tokenizer) return tokenizer->decode(ids);
  std::string bytes;
  for (const int64_t id : ids) bytes += static_cast<char>(id);
  return bytes;
}

// generate --prompt TEXT: one prompt, its tokens (or bytes) as ids, continued by rank 0 and
// printed as text.
int generate_from_text(std::vector<std::string> rest, const std::string& checkpoint,
                       const std::string& text, MpiEnv& mpi) {
  log_messages_to_stderr();  // standard output holds the text alone
  const Config config = parse_config(rest);
  check_can_generate(config);
  const GenerationOptions options = generation_options(config, deck_data_info(config.data));
  const std::optional<BpeTokenizer> tokenizer =
      prompt_tokenizer(config.data.tokenizer, options.vocab);
  if (mpi.world_rank() != 0) return 0;
  const Job job = set_up_job(config.train.threads);
  InferenceModel loaded = load_inference_model(config, checkpoint, job, /*comm=*/nullptr);
  const std::vector<int64_t> ids = prompt_ids(text, tokenizer);
  const Prompts prompt("--prompt", torch::tensor(ids, torch::kLong),
                       {0, static_cast<int64_t>(ids.size())});
  prompt.check_fit(options.vocab, options.context);
  const GeneratedRow row =
      generate_batch(loaded.runnable(), prompt, {0}, options, loaded.device).front();
  const std::string continuation = continuation_text(row.tokens, tokenizer);
  const std::string shown = printable(text + continuation);
  std::cout << shown << (shown.empty() || shown.back() != '\n' ? "\n" : "");
  return 0;
}

int64_t tokens_in(const std::vector<GeneratedRow>& rows) {
  int64_t tokens = 0;
  for (const GeneratedRow& row : rows) tokens += static_cast<int64_t>(row.tokens.size());
  return tokens;
}

// Seconds between progress lines.
constexpr double kProgressEveryS = 10;

struct MyRows {
  std::vector<GeneratedRow> rows;  // this attempt's, of this rank
  int64_t batches = 0;             // of them
  bool stopped = false;            // a stop signal came before every batch was done (every rank)
};

// The checkpoint's model. With ddp.zero = 3 on more than one rank, each rank keeps a shard of the
// parameters and every forward gathers each block's (a communicator for that alone); a line says
// what a rank holds.
struct GenerationModel {
  std::unique_ptr<Communicator> comm;  // ZeRO-3's; outlives the model sharded over it
  std::unique_ptr<InferenceModel> loaded;
};

GenerationModel load_generation_model(const Config& config, const std::string& checkpoint,
                                      const Job& job, const WatchedWorld& watched) {
  GenerationModel generation;
  const int ranks = watched.group->size();
  if (plan_sharding(config, ranks, job.device.device).parameters_sharded()) {
    generation.comm = make_communicator(config.ddp.backend, job.device.device, MPI_COMM_WORLD,
                                        watched.watchdog.get());
  }
  generation.loaded = std::make_unique<InferenceModel>(
      load_inference_model(config, checkpoint, job, generation.comm.get()));
  if (const ShardedParameters* units = generation.loaded->units.get()) {
    spdlog::info(
        "generate: ZeRO-3 over {} ranks: each holds {} of the parameters; gathered while they "
        "run: the root unit ({}) and each block's unit (up to {}), the whole window each token",
        ranks, human_bytes(units->held_bytes()), human_bytes(units->root_unit_bytes()),
        human_bytes(units->largest_unit_bytes()));
  }
  switch (generation.loaded->runnable().decoding()) {
    case Model::Decoding::kWholeWindow:
      spdlog::info("generate: the whole window's forward for each new token (no cache)");
      break;
    case Model::Decoding::kCache:
      spdlog::info(
          "generate: each new token one position's forward (a cache of keys and values); a "
          "batch holds prompts of one length");
      break;
    case Model::Decoding::kCacheWithPadding:
      spdlog::info(
          "generate: each new token one position's forward (a cache of keys and values); "
          "prompts of different lengths share a batch, left-padded");
      break;
  }
  return generation;
}

// generate.batch_size, found by trials where it is auto (0).
int64_t batch_size_for(InferenceModel& loaded, const Prompts& prompts,
                       const GenerationOptions& options, HostGroup& group,
                       const FaultInjector& faults) {
  if (options.batch_size > 0) return options.batch_size;
  return largest_generation_batch(loaded.runnable(), prompts, options, loaded.device, group,
                                  faults.trial_sample_limit());
}

// ZeRO-3: the forwards every rank makes in round `round` (of batches.size() / ranks), the most
// that any of the round's batches may need; 0 where each rank runs its own.
int64_t lockstep_forwards(InferenceModel& loaded, const Prompts& prompts,
                          const std::vector<std::vector<int64_t>>& batches, size_t round,
                          size_t ranks, const GenerationOptions& options) {
  if (!loaded.runnable().forwards_in_lockstep()) return 0;
  int64_t most = 0;
  for (size_t b = round * ranks; b < std::min(batches.size(), (round + 1) * ranks); ++b) {
    most = std::max(most, most_forwards(prompts, batches[b], options));
  }
  return most;
}

// The line said every kProgressEveryS seconds (rank 0 prints): batches handed out, this rank's
// speed, the time left at that pace.
class ProgressLine {
 public:
  explicit ProgressLine(size_t batches) : batches_(batches) {}
  void after(size_t handed_out, const std::vector<GeneratedRow>& mine) {
    const double now = clock_.seconds();
    if (now - last_ < kProgressEveryS || handed_out == 0) return;
    last_ = now;
    spdlog::info(
        "generate: {}/{} batches handed out, {:.0f} tokens/s on this rank, about {:.0f} s left",
        handed_out, batches_, static_cast<double>(tokens_in(mine)) / now,
        now / static_cast<double>(handed_out) * static_cast<double>(batches_ - handed_out));
  }

 private:
  size_t batches_;
  Stopwatch clock_;
  double last_ = 0;
};

// Each rank takes the next batch as it frees up (comm/work_counter.hpp), each recorded in
// `progress` as it ends. A stop signal to any rank closes the handing out: every rank ends after
// the batch in hand, and every rank learns that the job stopped.
MyRows generate_as_handed_out(InferenceModel& loaded, const Prompts& prompts,
                              const std::vector<std::vector<int64_t>>& batches,
                              const GenerationOptions& options, GenerationProgress& progress,
                              HostGroup& group, Watchdog* watchdog, FaultInjector& faults) {
  MyRows mine;
  WorkCounter counter(group.comm(), static_cast<int64_t>(batches.size()), watchdog);
  ProgressLine line(batches.size());
  while (true) {
    const int64_t b = counter.next(pending_stop_signal() != 0);
    if (b < 0) {
      mine.stopped = b == WorkCounter::kStopped;
      break;
    }
    faults.in_forward();  // a test's slow rank
    const std::vector<GeneratedRow> batch = generate_batch(
        loaded.runnable(), prompts, batches[static_cast<size_t>(b)], options, loaded.device);
    progress.record(batch);
    mine.rows.insert(mine.rows.end(), batch.begin(), batch.end());
    ++mine.batches;
    line.after(static_cast<size_t>(counter.handed_out()), mine.rows);
  }
  mine.stopped = !group.all("generation not stopped", !mine.stopped);
  return mine;
}

// ZeRO-3 (every rank makes every forward): batch r x ranks + rank in round r. Every rank takes
// part in every round, a batch or none, and the round ends with an agreement on a stop signal: a
// signal to any rank stops every rank after that round.
MyRows generate_in_rounds(InferenceModel& loaded, const Prompts& prompts,
                          const std::vector<std::vector<int64_t>>& batches,
                          const GenerationOptions& options, GenerationProgress& progress,
                          HostGroup& group) {
  const auto ranks = static_cast<size_t>(group.size());
  const size_t rounds = (batches.size() + ranks - 1) / ranks;
  MyRows mine;
  ProgressLine line(batches.size());
  for (size_t round = 0; round < rounds; ++round) {
    const size_t b = round * ranks + static_cast<size_t>(group.rank());
    const bool have = b < batches.size();
    const std::vector<GeneratedRow> batch = generate_batch(
        loaded.runnable(), prompts, have ? batches[b] : std::vector<int64_t>(), options,
        loaded.device, lockstep_forwards(loaded, prompts, batches, round, ranks, options));
    if (have) {
      progress.record(batch);
      mine.rows.insert(mine.rows.end(), batch.begin(), batch.end());
      ++mine.batches;
    }
    const bool go_on = group.all("no stop signal after a batch", pending_stop_signal() == 0);
    if (round + 1 == rounds) break;
    if (!go_on) {
      mine.stopped = true;
      break;
    }
    line.after(std::min(batches.size(), (round + 1) * ranks), mine.rows);
  }
  return mine;
}

// What chose the tokens: an earlier attempt's rows are kept only if it had the same (the prompts'
// content too, and whether the moving average's weights were taken).
std::string settings_text(const std::string& checkpoint, int64_t step, bool moving_average,
                          const Prompts& prompts, const GenerationOptions& o) {
  return fmt::format(
      "checkpoint {}\nstep {}\nmoving average {}\ninput {}\nprompts {:016x}\nmax_new_tokens {}\n"
      "temperature {}\ntop_k {}\ntop_p {}\nseed {}\nstop {}\nbatch_size {}\ncontext {}\n"
      "vocab {}\n",
      std::filesystem::weakly_canonical(checkpoint).string(), step, moving_average,
      std::filesystem::absolute(prompts.path()).string(), prompts.fingerprint(), o.max_new_tokens,
      o.sampling.temperature, o.sampling.top_k, o.sampling.top_p, o.sampling.seed,
      fmt::join(o.stop, ","), o.batch_size, o.context, o.vocab);
}

// The batches of which an earlier attempt did not finish every row.
std::vector<std::vector<int64_t>> still_to_do(const std::vector<std::vector<int64_t>>& batches,
                                              const GenerationProgress& progress) {
  std::vector<std::vector<int64_t>> to_do;
  for (const auto& batch : batches) {
    if (!std::all_of(batch.begin(), batch.end(),
                     [&](int64_t row) { return progress.done_before(row); })) {
      to_do.push_back(batch);
    }
  }
  return to_do;
}

// Refused before anything runs: an output that would replace the prompts or the checkpoint, and
// more values than one rank receives in one message (2^31 - 1) before the write.
void check_paths_and_size(const std::string& input, const std::string& output,
                          const std::string& checkpoint, const Prompts& prompts,
                          const GenerationOptions& options, int ranks) {
  for (const std::string& kept : {input, checkpoint}) {
    if (std::filesystem::weakly_canonical(output) == std::filesystem::weakly_canonical(kept)) {
      throw ConfigError("generate: --output " + output + " would replace " + kept +
                        ": name another file");
    }
  }
  const double rows_per_rank = std::ceil(static_cast<double>(prompts.rows()) / ranks);
  const double words = rows_per_rank * (3 + 2 * static_cast<double>(options.max_new_tokens));
  if (words > static_cast<double>(std::numeric_limits<int>::max())) {
    throw ConfigError(fmt::format(
        "generate: {} prompts x generate.max_new_tokens = {} on {} rank(s) may give one rank more "
        "values to write than one message holds; split the prompts into files of fewer rows",
        prompts.rows(), options.max_new_tokens, ranks));
  }
}

// The line and the exit code of a job stopped by a signal, its rows kept.
int stopped_by_signal(const std::string& output) {
  const int signal = pending_stop_signal();
  spdlog::info(
      "generate: stopped by {}; the rows done are kept in {}.partial: the same command continues",
      signal != 0 ? signal_name(signal) : "a signal to another rank", output);
  return static_cast<int>(ExitCode::kStopped);
}

}  // namespace

int generate_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  std::vector<std::string> rest = args;
  const std::string checkpoint = take_required_flag(rest, "checkpoint", kGenerateUsage);
  const std::string text = take_flag(rest, "prompt");
  if (!text.empty()) return generate_from_text(rest, checkpoint, text, mpi);
  const std::string input = take_required_flag(rest, "input", kGenerateUsage);
  const std::string output = take_required_flag(rest, "output", kGenerateUsage);
  const Config config = parse_config(rest);
  check_can_generate(config);
  const Job job = set_up_job(config.train.threads);
  const WatchedWorld watched = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  HostGroup& group = *watched.group;
  const std::unique_ptr<FaultInjector> faults = faults_from_environment(group.rank());
  const GenerationModel generation = load_generation_model(config, checkpoint, job, watched);
  InferenceModel& loaded = *generation.loaded;
  GenerationOptions options = generation_options(config, loaded.info);
  const Prompts prompts = Prompts::read(input);
  prompts.check_fit(options.vocab, options.context);
  options.batch_size = batch_size_for(loaded, prompts, options, group, *faults);
  check_paths_and_size(input, output, checkpoint, prompts, options, group.size());
  GenerationProgress progress(
      output, settings_text(checkpoint, loaded.step, config.train.ema_decay > 0, prompts, options),
      prompts.rows(), group);
  if (progress.rows_done_before() > 0) {
    spdlog::info("generate: continuing: {} of {} rows were done before (kept in {}.partial)",
                 progress.rows_done_before(), prompts.rows(), output);
  }
  const Stopwatch clock;
  const std::vector<std::vector<int64_t>> batches =
      still_to_do(plan_batches(prompts, options.batch_size,
                               loaded.runnable().decoding() == Model::Decoding::kCacheWithPadding),
                  progress);
  MyRows mine = loaded.runnable().forwards_in_lockstep()
                    ? generate_in_rounds(loaded, prompts, batches, options, progress, group)
                    : generate_as_handed_out(loaded, prompts, batches, options, progress, group,
                                             watched.watchdog.get(), *faults);
  if (mine.stopped) return stopped_by_signal(output);
  const double seconds = clock.seconds();
  const std::vector<double> batches_of =
      group.all_gather("batches per rank", std::vector<double>{static_cast<double>(mine.batches)});
  // Rank 0 brings the earlier attempts' rows (it alone read them); it prints, and its count of
  // their tokens is the one that matters.
  int64_t earlier = 0;
  for (const auto& [row, kept] : progress.earlier_rows()) {
    earlier += static_cast<int64_t>(kept.tokens.size());
    mine.rows.push_back(kept);
  }
  const int64_t tokens =
      write_generations(output, {checkpoint, loaded.step, input, options, config.generate.stop},
                        prompts.rows(), mine.rows, group);
  if (group.rank() == 0) progress.remove();
  const int64_t now = tokens - earlier;
  spdlog::info(
      "generate: {} prompts of {}, {} new tokens in {:.2f} s ({:.0f} tokens/s{}) on {} rank(s) "
      "(batches per rank: {}) with {} (step {}) -> {}",
      prompts.rows(), input, tokens, seconds, static_cast<double>(now) / seconds,
      now < tokens ? fmt::format("; {} tokens were made before", tokens - now) : "",
      mpi.world_size(), fmt::join(batches_of, ", "), checkpoint, loaded.step, output);
  return 0;
}

}  // namespace ddpt
