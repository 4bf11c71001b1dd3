// data.type = tokens: a language-model corpus as one 1-D integer array of token ids (uint16 or
// uint32, as nanoGPT-style preprocessing writes them). Sample i is the window of data.block + 1
// tokens starting at i * data.stride: inputs are its first block tokens, targets the block tokens
// after each one. The sampler shuffles windows, so training sees them in a random order each epoch
// (data.stride = 1 makes every offset a window). Each window is one hyperslab read from disk.
#pragma once

#include "data/dataset.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"

namespace ddpt {

class TokenStream final : public Dataset {
 public:
  // vocab_if_unset: used when the tokens dataset has no `vocab` attribute (0: then an error).
  TokenStream(const std::string& path, const std::string& tokens, int64_t block, int64_t stride,
              int64_t vocab_if_unset);
  int64_t size() const override { return windows_; }
  Batch get(const torch::Tensor& indices) const override;
  DatasetInfo info() const override { return {Task::kNextToken, {block_}, vocab_}; }
  std::string describe() const override;

 private:
  H5File file_;
  H5Dataset tokens_;
  int64_t block_;
  int64_t stride_;
  int64_t vocab_ = 0;
  int64_t windows_ = 0;
};

}  // namespace ddpt
