#include "data/synthetic_tokens.hpp"

#include <fmt/format.h>

#include "data/synthetic_tables.hpp"

namespace ddpt {

SyntheticTokens::SyntheticTokens(int64_t windows, int64_t block, int64_t stride, int64_t vocab,
                                 int64_t seed)
    : windows_(windows),
      block_(block),
      stride_(stride),
      vocab_(vocab),
      stream_(markov_tokens((windows - 1) * stride + block + 1, vocab, seed)) {}

Batch SyntheticTokens::get(const torch::Tensor& indices) const {
  // Row k of `positions` holds the stream offsets of window indices[k] and its next token.
  const torch::Tensor starts = indices.to(torch::kLong).mul(stride_).unsqueeze(1);
  const torch::Tensor positions = starts + torch::arange(block_ + 1, torch::kLong).unsqueeze(0);
  const torch::Tensor windows =
      stream_.index_select(0, positions.flatten()).view(positions.sizes());
  using torch::indexing::None;
  using torch::indexing::Slice;
  return {windows.index({Slice(), Slice(0, block_)}).contiguous(),
          windows.index({Slice(), Slice(1, None)}).contiguous()};
}

std::string SyntheticTokens::describe() const {
  return fmt::format(
      "synthetic tokens (next-token): {} windows of {} at stride {} from a sparse Markov chain "
      "of {} tokens, vocab {}",
      windows_, block_, stride_, stream_.numel(), vocab_);
}

}  // namespace ddpt
