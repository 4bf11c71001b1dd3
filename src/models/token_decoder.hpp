// Decoding with a cache: a next-token model that keeps each layer's keys and values of the
// positions it has run, so each new token costs one position's forward instead of the whole
// window's. Made per batch of rows by Model::decoder(); its memory (every layer's keys and
// values for `rows` x `capacity` slots) is taken once, when it is made. Where the model says so
// (Model::Decoding::kCacheWithPadding), prompts of different lengths share a batch left-padded:
// row i's first padding[i] slots hold no token (whatever `step` is given there is never attended
// to) and its positions count from the slot after them, so a row's logits are those of its
// prompt alone.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace ddpt {

class TokenDecoder {
 public:
  virtual ~TokenDecoder() = default;
  // Runs `tokens` ([rows, T] int64: each row's next T tokens, in the slots after those run so
  // far) and returns the logits of each row's last one ([rows, vocab]).
  virtual torch::Tensor step(const torch::Tensor& tokens) = 0;
  // From now on only the rows `kept` (ascending indices into the current rows), in that order:
  // their cached slots (and padding) move to the front, in place.
  virtual void keep_rows(const std::vector<int64_t>& kept) = 0;
};

}  // namespace ddpt
