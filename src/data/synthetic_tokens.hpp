// data.type = synthetic_tokens: a markov_tokens() stream held in memory, cut into windows like a
// token file (the same stream as `ddptrain make-data tokens` with --tokens samples x stride + block
// + 1 - stride and the same seed).
#pragma once

#include "data/dataset.hpp"

namespace ddpt {

class SyntheticTokens final : public Dataset {
 public:
  // `windows` windows of `block` tokens, `stride` apart, over `vocab` token ids.
  SyntheticTokens(int64_t windows, int64_t block, int64_t stride, int64_t vocab, int64_t seed);
  int64_t size() const override { return windows_; }
  Batch get(const torch::Tensor& indices) const override;
  DatasetInfo info() const override { return {Task::kNextToken, {block_}, vocab_}; }
  std::string describe() const override;

 private:
  int64_t windows_;
  int64_t block_;
  int64_t stride_;
  int64_t vocab_;
  torch::Tensor stream_;  // [windows x stride + block + 1 - stride] int64
};

}  // namespace ddpt
