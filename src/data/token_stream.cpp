#include "data/token_stream.hpp"

#include <fmt/format.h>

#include "h5/h5_lock.hpp"
#include "util/error.hpp"

namespace ddpt {

TokenStream::TokenStream(const std::string& path, const std::string& tokens, int64_t block,
                         int64_t stride, int64_t vocab_if_unset)
    : file_(H5File::open_read(path)),
      tokens_(H5Dataset::open(file_, tokens)),
      block_(block),
      stride_(stride) {
  if (tokens_.shape().size() != 1 || !c10::isIntegralType(tokens_.dtype(), false)) {
    throw DataError(
        fmt::format("{} is {} of shape [{}]; token streams are 1-D integer arrays", tokens_.where(),
                    tokens_.stored_type(), fmt::join(tokens_.shape(), ", ")),
        Raised::kAllRanks);
  }
  if (tokens_.rows() < block_ + 1) {
    throw DataError(fmt::format("{} has {} tokens; data.block = {} needs at least {}",
                                tokens_.where(), tokens_.rows(), block_, block_ + 1),
                    Raised::kAllRanks);
  }
  windows_ = (tokens_.rows() - block_ - 1) / stride_ + 1;
  vocab_ = tokens_.has_attribute("vocab") ? tokens_.read_int_attribute("vocab") : vocab_if_unset;
  if (vocab_ < 2) {
    throw DataError(
        tokens_.where() + " has no 'vocab' attribute: set data.vocab to the vocabulary size",
        Raised::kAllRanks);
  }
}

Batch TokenStream::get(const torch::Tensor& indices) const {
  const int64_t n = indices.numel();
  torch::Tensor windows = torch::empty({n, block_ + 1}, torch::kLong);
  const auto index = indices.to(torch::kLong).contiguous();
  const int64_t* i = index.data_ptr<int64_t>();
  {
    const Hdf5Lock lock;  // checkpoint.async may be writing a checkpoint on another thread
    for (int64_t k = 0; k < n; ++k) {
      windows[k].copy_(tokens_.read_range(i[k] * stride_, block_ + 1));
    }
  }
  const auto [low, high] = torch::aminmax(windows);
  if (low.item<int64_t>() < 0 || high.item<int64_t>() >= vocab_) {
    throw DataError(
        fmt::format("{}: token id {} is outside the vocabulary [0, {})", tokens_.where(),
                    low.item<int64_t>() < 0 ? low.item<int64_t>() : high.item<int64_t>(), vocab_),
        Raised::kThisRank);
  }
  using torch::indexing::Slice;
  return {windows.index({Slice(), Slice(0, block_)}).contiguous(),
          windows.index({Slice(), Slice(1, torch::indexing::None)}).contiguous()};
}

std::string TokenStream::describe() const {
  return fmt::format("{} (next-token): {} {} tokens ({}), vocab {}, {} windows of {} at stride {}",
                     file_.path(), tokens_.name(), tokens_.rows(), tokens_.stored_type(), vocab_,
                     windows_, block_, stride_);
}

}  // namespace ddpt
