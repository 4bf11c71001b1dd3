// ddptrain generate DECK --checkpoint PATH --input PROMPTS.h5 --output OUT.h5: every prompt of
// the input continued by the checkpoint's model (generate/generation.hpp), the batches dealt to
// the ranks in turn, and the new tokens written into one file in the prompts' order. With
// --prompt TEXT instead: one prompt of a byte-level model, printed with its continuation.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "app/commands.hpp"
#include "comm/watched_world.hpp"
#include "config/command_flags.hpp"
#include "config/deck_text.hpp"
#include "config/parse_config.hpp"
#include "data/make_datasets.hpp"
#include "data/prompts_file.hpp"
#include "io/generation_progress.hpp"
#include "io/generations_writer.hpp"
#include "setup/inference_model.hpp"
#include "setup/run_options.hpp"
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
void check_can_generate(const Config& config, int world_size) {
  if (deck_data_info(config.data).task != Task::kNextToken) {
    throw ConfigError(
        "generate needs a next-token model (a deck with data.type = tokens or synthetic_tokens); "
        "this deck's model predicts rows: use ddptrain predict");
  }
  if (config.ddp.zero == 3 && world_size > 1) {
    throw ConfigError(
        "generate does not shard the weights yet: set --ddp.zero=0 (every rank then holds the "
        "whole model)");
  }
}

// This rank's rows as [row, finish, count, tokens...] ... and their log-probabilities, for the
// gather to rank 0.
std::pair<std::vector<int64_t>, std::vector<double>> packed(const std::vector<GeneratedRow>& rows) {
  std::vector<int64_t> records;
  std::vector<double> logprobs;
  for (const GeneratedRow& row : rows) {
    records.insert(records.end(), {row.row, static_cast<int64_t>(row.finish),
                                   static_cast<int64_t>(row.tokens.size())});
    records.insert(records.end(), row.tokens.begin(), row.tokens.end());
    logprobs.insert(logprobs.end(), row.logprobs.begin(), row.logprobs.end());
  }
  return {records, logprobs};
}

// Every rank's rows on rank 0, in row order (nothing on the others).
std::vector<GeneratedRow> gathered(const std::vector<GeneratedRow>& mine, HostGroup& group) {
  const auto [records, logprobs] = packed(mine);
  const std::vector<int64_t> all_records = group.gather("generated rows", records);
  const std::vector<double> all_logprobs = group.gather("generated log-probabilities", logprobs);
  std::vector<GeneratedRow> rows;
  size_t at = 0;
  size_t logprob = 0;
  while (at < all_records.size()) {
    GeneratedRow row;
    row.row = all_records[at];
    row.finish = static_cast<Finish>(all_records[at + 1]);
    const auto count = static_cast<size_t>(all_records[at + 2]);
    at += 3;
    row.tokens.assign(all_records.begin() + at, all_records.begin() + at + count);
    row.logprobs.assign(all_logprobs.begin() + logprob, all_logprobs.begin() + logprob + count);
    at += count;
    logprob += count;
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(),
            [](const GeneratedRow& a, const GeneratedRow& b) { return a.row < b.row; });
  return rows;
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

// generate --prompt TEXT: one prompt, its bytes as token ids, continued by rank 0 and printed.
int generate_from_text(std::vector<std::string> rest, const std::string& checkpoint,
                       const std::string& text, MpiEnv& mpi) {
  const Config config = parse_config(rest);
  check_can_generate(config, /*world_size=*/1);
  const GenerationOptions options = generation_options(config, deck_data_info(config.data));
  if (options.vocab != 256) {
    throw ConfigError(fmt::format(
        "--prompt takes text for a byte-level model (vocabulary 256); this one has {}: write a "
        "prompts file of token ids and use --input/--output",
        options.vocab));
  }
  if (mpi.world_rank() != 0) return 0;
  const Job job = set_up_job(config.train.threads);
  InferenceModel loaded = load_inference_model(config, checkpoint, job, /*comm=*/nullptr);
  std::vector<int64_t> bytes;
  for (const char c : text) bytes.push_back(static_cast<unsigned char>(c));
  const Prompts prompt("--prompt", torch::tensor(bytes, torch::kLong),
                       {0, static_cast<int64_t>(bytes.size())});
  prompt.check_fit(options.vocab, options.context);
  const GeneratedRow row =
      generate_batch(loaded.runnable(), prompt, {0}, options, loaded.device).front();
  std::string continuation;
  for (const int64_t token : row.tokens) continuation += static_cast<char>(token);
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
  bool stopped = false;            // a stop signal came before every batch was done
};

// The batches dealt to `rank` (every `ranks`-th from its own), generated, each recorded in
// `progress` as it ends; after each, a stop signal ends the loop. A progress line (rank 0 only
// prints) every kProgressEveryS seconds: its batches done, tokens/s, the time left.
MyRows generate_my_batches(InferenceModel& loaded, const Prompts& prompts,
                           const std::vector<std::vector<int64_t>>& batches,
                           const GenerationOptions& options, int rank, int ranks,
                           GenerationProgress& progress) {
  const size_t total = (batches.size() + ranks - 1 - static_cast<size_t>(rank)) / ranks;
  MyRows mine;
  const Stopwatch clock;
  double last_line = 0;
  size_t done = 0;
  for (size_t b = static_cast<size_t>(rank); b < batches.size(); b += ranks) {
    const std::vector<GeneratedRow> batch =
        generate_batch(loaded.runnable(), prompts, batches[b], options, loaded.device);
    progress.record(batch);
    mine.rows.insert(mine.rows.end(), batch.begin(), batch.end());
    ++done;
    if (pending_stop_signal() != 0 && done < total) {
      mine.stopped = true;
      break;
    }
    const double now = clock.seconds();
    if (now - last_line < kProgressEveryS || done == total) continue;
    last_line = now;
    spdlog::info("generate: {}/{} batches of this rank, {} rows, {:.0f} tokens/s, {:.0f} s left",
                 done, total, mine.rows.size(), static_cast<double>(tokens_in(mine.rows)) / now,
                 now / static_cast<double>(done) * static_cast<double>(total - done));
  }
  return mine;
}

// What chose the tokens: an earlier attempt's rows are kept only if it had the same.
std::string settings_text(const std::string& checkpoint, int64_t step, const std::string& input,
                          const GenerationOptions& o) {
  return fmt::format(
      "checkpoint {}\nstep {}\ninput {}\nmax_new_tokens {}\ntemperature {}\ntop_k {}\n"
      "top_p {}\nseed {}\nstop {}\nbatch_size {}\ncontext {}\nvocab {}\n",
      std::filesystem::weakly_canonical(checkpoint).string(), step,
      std::filesystem::absolute(input).string(), o.max_new_tokens, o.sampling.temperature,
      o.sampling.top_k, o.sampling.top_p, o.sampling.seed, fmt::join(o.stop, ","), o.batch_size,
      o.context, o.vocab);
}

// The batches no earlier attempt finished (a batch is recorded whole).
std::vector<std::vector<int64_t>> still_to_do(const std::vector<std::vector<int64_t>>& batches,
                                              const GenerationProgress& progress) {
  std::vector<std::vector<int64_t>> to_do;
  for (const auto& batch : batches) {
    if (progress.done_before().count(batch.front()) == 0) to_do.push_back(batch);
  }
  return to_do;
}

// This attempt's rows and the earlier attempts', in row order.
std::vector<GeneratedRow> with_earlier(std::vector<GeneratedRow> rows,
                                       const GenerationProgress& progress) {
  if (!progress.resumed()) return rows;
  for (const auto& [row, done] : progress.done_before()) rows.push_back(done);
  std::sort(rows.begin(), rows.end(),
            [](const GeneratedRow& a, const GeneratedRow& b) { return a.row < b.row; });
  return rows;
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
  check_can_generate(config, mpi.world_size());
  const Job job = set_up_job(config.train.threads);
  const WatchedWorld watched = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  HostGroup& group = *watched.group;
  InferenceModel loaded = load_inference_model(config, checkpoint, job, /*comm=*/nullptr);
  const GenerationOptions options = generation_options(config, loaded.info);
  const Prompts prompts = Prompts::read(input);
  prompts.check_fit(options.vocab, options.context);
  GenerationProgress progress(output, settings_text(checkpoint, loaded.step, input, options),
                              group);
  if (progress.resumed()) {
    spdlog::info("generate: continuing: {} of {} rows were done before (kept in {}.partial)",
                 progress.done_before().size(), prompts.rows(), output);
  }
  const Stopwatch clock;
  const MyRows mine = generate_my_batches(
      loaded, prompts, still_to_do(plan_batches(prompts, options.batch_size), progress), options,
      mpi.world_rank(), mpi.world_size(), progress);
  if (!group.all("every batch generated", !mine.stopped)) {
    const int signal = pending_stop_signal();
    spdlog::info(
        "generate: stopped by {}; the rows done are kept in {}.partial: the same command "
        "continues",
        signal != 0 ? signal_name(signal) : "a signal to another rank", output);
    return static_cast<int>(ExitCode::kStopped);
  }
  std::vector<GeneratedRow> done = gathered(mine.rows, group);  // rank 0: every rank's
  if (group.rank() == 0) done = with_earlier(std::move(done), progress);
  const int64_t tokens = group.max("generated token count", tokens_in(done));
  const double seconds = clock.seconds();
  write_generations(output, {checkpoint, loaded.step, input, options, config.generate.stop},
                    prompts.rows(), tokens, done, group);
  if (group.rank() == 0) progress.remove();
  int64_t earlier = 0;
  for (const auto& [row, kept] : progress.done_before()) earlier += tokens_in({kept});
  spdlog::info(
      "generate: {} prompts of {}, {} new tokens in {:.2f} s ({:.0f} tokens/s{}) on {} rank(s) "
      "with {} (step {}) -> {}",
      prompts.rows(), input, tokens, seconds, static_cast<double>(tokens - earlier) / seconds,
      earlier > 0 ? fmt::format("; {} tokens were made before", earlier) : "", mpi.world_size(),
      checkpoint, loaded.step, output);
  return 0;
}

}  // namespace ddpt
