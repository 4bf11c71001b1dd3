#include "generate/generation_batch_size.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "run/batch_size_search.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// The most rows a batch can hold (prompts that do not fill the context, of one length unless the
// model takes padded prompts) and the longest such prompt.
struct Largest {
  int64_t rows = 0;
  int64_t length = 0;
};

Largest largest_batch_possible(const Prompts& prompts, const GenerationOptions& options,
                               bool mixed_lengths) {
  std::map<int64_t, int64_t> rows_of_length;  // of the prompts that do not fill the context
  for (int64_t row = 0; row < prompts.rows(); ++row) {
    if (prompts.length(row) < options.context) ++rows_of_length[prompts.length(row)];
  }
  Largest largest;
  int64_t every = 0;
  for (const auto& [length, rows] : rows_of_length) {
    largest.rows = std::max(largest.rows, rows);
    largest.length = length;  // the map's last: the longest
    every += rows;
  }
  if (mixed_lengths) largest.rows = every;
  return largest;
}

// One trial of `rows` rows of `length` tokens at the batch's peak; false where memory ran out.
bool trial_fits(Model& model, int64_t rows, int64_t length, const GenerationOptions& options,
                torch::Device device, std::optional<int64_t> trial_limit) {
  try {
    if (trial_limit && rows > *trial_limit) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "simulated (a test's limit of ", *trial_limit,
                       " rows): a batch of ", rows, " does not fit");
    }
    const c10::InferenceMode inference;
    const auto tokens = [&](int64_t time) {
      return torch::zeros({rows, time}, torch::TensorOptions(torch::kLong).device(device));
    };
    if (std::unique_ptr<TokenDecoder> decoder =
            model.decoder(std::vector<int64_t>(static_cast<size_t>(rows), 0), options.context)) {
      decoder->step(tokens(length));
      if (length + 1 < options.context) decoder->step(tokens(1));
    } else {
      model.forward(tokens(std::min(options.context, length + options.max_new_tokens - 1)));
    }
    return true;
  } catch (const c10::OutOfMemoryError&) {
    release_cached_device_memory(device);
    return false;
  }
}

}  // namespace

int64_t largest_generation_batch(Model& model, const Prompts& prompts,
                                 const GenerationOptions& options, torch::Device device,
                                 HostGroup& group, std::optional<int64_t> trial_limit) {
  if (!device.is_cuda() && !trial_limit) {
    throw ConfigError(fmt::format(
        "option 'generate.batch_size' = auto finds the most prompts per forward that fit in GPU "
        "memory, and this run is on {}: set a number",
        device.str()));
  }
  if (model.forwards_in_lockstep()) {
    throw ConfigError(
        "option 'generate.batch_size' = auto does not go with ddp.zero = 3 on more than one rank "
        "(a rank out of memory inside a gather would leave the others waiting): set a number");
  }
  const Largest largest = largest_batch_possible(
      prompts, options, model.decoding() == Model::Decoding::kCacheWithPadding);
  if (largest.rows == 0) return 1;  // every prompt fills the context: nothing to run
  const int64_t limit = std::min(largest.rows, kMaxAutoBatch);
  spdlog::info("generate.batch_size = auto: trials of up to {} prompts of {} tokens on {}", limit,
               largest.length, device.str());
  const BatchSizeTrials trials = search_largest_batch(limit, [&](int64_t rows) {
    return group.all(fmt::format("generation trial of {} prompts", rows),
                     trial_fits(model, rows, largest.length, options, device, trial_limit));
  });
  release_cached_device_memory(device);
  if (trials.largest == 0) {
    throw OutOfMemoryError(
        fmt::format("generate.batch_size = auto: not even 1 prompt of {} tokens fits in GPU "
                    "memory on every rank",
                    largest.length),
        Raised::kAllRanks);
  }
  spdlog::info("generate.batch_size = auto: {} prompts per forward", trials.text());
  return trials.largest;
}

}  // namespace ddpt
