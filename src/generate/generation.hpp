// The rows `ddptrain generate` continues, batch by batch. The batches are formed from the prompts
// alone (rows ordered by prompt length, at most generate.batch_size of them together), so a row's
// batch, and with it the logits it is continued from, is the same on any rank count; a rank
// generates the batches given to it. A model with a cache of keys and values
// (models/token_decoder.hpp) runs the prompts once and then one slot per new token: the built-in
// GPT with prompts of different lengths left-padded in one batch, a TorchScript model's cached
// step with prompts of one length. Any other next-token model runs the whole window for each new
// token (tokens [N, T] -> logits [N, T, vocab]), prompts of one length, as does a model sharded by
// ZeRO-3, in lockstep with the other ranks. Rows that have finished are left out of the next
// forwards.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "data/prompts_file.hpp"
#include "generate/sampling.hpp"
#include "models/model.hpp"

namespace ddpt {

struct GenerationOptions {
  SamplingOptions sampling;
  int64_t max_new_tokens = 64;
  std::vector<int64_t> stop;  // token ids that end a row (kept as its last token)
  int64_t batch_size = 8;     // rows per forward; 0: generate.batch_size = auto, not yet found
  int64_t context = 0;        // the model's window: a row ends once it holds this many tokens
  int64_t vocab = 0;          // token ids the model knows
  // Token ids a row may be continued with: the data's vocabulary, where the model's is padded
  // beyond it (GPT-2's 50257 in 50304 rows); those rows' logits are never looked at.
  int64_t choices = 0;
};

// Why a row ended, as /finish stores it.
enum class Finish : int64_t {
  kMaxNewTokens = 0,  // generate.max_new_tokens reached
  kStopToken = 1,     // a token of generate.stop
  kContextFull = 2,   // the row filled the model's context
};

struct GeneratedRow {
  int64_t row = 0;
  std::vector<int64_t> tokens;  // the new tokens only
  std::vector<double> logprobs;
  Finish finish = Finish::kMaxNewTokens;
};

// Rows ordered by prompt length (then by row), cut into batches of at most `batch_size` rows: of
// any lengths where `mixed_lengths` (the model's decoder takes padded prompts), else of one.
std::vector<std::vector<int64_t>> plan_batches(const Prompts& prompts, int64_t batch_size,
                                               bool mixed_lengths);

// The most forwards `batch` can take: one per new token.
int64_t most_forwards(const Prompts& prompts, const std::vector<int64_t>& batch,
                      const GenerationOptions& options);

// Continues the rows of `batch` (as plan_batches makes them; may be empty) with `model` on
// `device`; the results in the batch's order. A model whose forwards run in lockstep over the ranks
// (ZeRO-3: each gathers the parameters) makes `lockstep_forwards` forwards in all, the batch's
// and then one-token forwards that count for nothing, so that every rank makes as many.
std::vector<GeneratedRow> generate_batch(Model& model, const Prompts& prompts,
                                         const std::vector<int64_t>& batch,
                                         const GenerationOptions& options, torch::Device device,
                                         int64_t lockstep_forwards = 0);

}  // namespace ddpt
