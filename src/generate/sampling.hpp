// How the next token of a row is chosen from the model's logits ([generate] in the deck). Every
// random draw comes from a counter-based generator (ATen's Philox 4x32-10) keyed by the seed, the
// row and the position, never from a stream shared by the rows: a row's tokens depend neither on
// the rank count nor on the rows that share its batch (Hugging Face's `generate` draws from one
// global stream, so its samples change with the batch). The choice is made on the host in double
// precision from one row's logits, so it is the same wherever the logits are.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace ddpt {

struct SamplingOptions {
  double temperature = 0;  // 0: greedy
  int64_t top_k = 0;       // 0: every token
  double top_p = 1;        // 1: every token
  int64_t seed = 0;
};

struct TokenChoice {
  int64_t token = 0;
  // The chosen token's log-probability under the model (the log-softmax of the logits as they
  // are, whatever the temperature and the filters sampled from).
  double logprob = 0;
};

// The draw for (`seed`, `row`, `position`), uniform in [0, 1) with 53 random bits.
double uniform_draw(int64_t seed, int64_t row, int64_t position);

// The token at `position` (its index in the whole sequence) of `row`, from `logits` (1-D, one
// value per token id). Greedy: the most likely token (the lowest id among equals). Sampled: the
// logits divided by the temperature, cut to the top_k most likely, then to the most likely whose
// probabilities reach top_p, and one token drawn with uniform_draw.
TokenChoice choose_token(const torch::Tensor& logits, const SamplingOptions& options, int64_t row,
                         int64_t position);
// The same on `vocab` values in host memory (a row of a batch's logits, without a tensor each).
TokenChoice choose_token(const double* logits, int64_t vocab, const SamplingOptions& options,
                         int64_t row, int64_t position);

}  // namespace ddpt
