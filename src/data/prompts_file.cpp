#include "data/prompts_file.hpp"

#include <fmt/format.h>

#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Every rank reads and checks the same file, so each raises the same error.
[[noreturn]] void bad_prompts(const std::string& path, const std::string& what) {
  throw DataError(fmt::format("prompts '{}': {}", path, what), Raised::kAllRanks);
}

}  // namespace

Prompts Prompts::read(const std::string& path) {
  const H5File file = H5File::open_read(path);
  const H5Dataset tokens = H5Dataset::open(file, "tokens");
  const H5Dataset offsets = H5Dataset::open(file, "offsets");
  if (tokens.shape().size() != 1 || !c10::isIntegralType(tokens.dtype(), /*includeBool=*/false)) {
    bad_prompts(path, "dataset 'tokens' must be 1-D integer token ids, not " +
                          tokens.stored_type() +
                          fmt::format(" [{}]", fmt::join(tokens.shape(), ", ")));
  }
  if (offsets.shape().size() != 1 || offsets.dtype() != torch::kLong || offsets.shape()[0] < 2) {
    bad_prompts(path,
                "dataset 'offsets' must be 1-D int64 of rows + 1 values (one prompt at least), "
                "not " +
                    offsets.stored_type() + fmt::format(" [{}]", fmt::join(offsets.shape(), ", ")));
  }
  const torch::Tensor read = offsets.read_all().contiguous();
  return Prompts(
      path, tokens.read_all().to(torch::kLong),
      std::vector<int64_t>(read.data_ptr<int64_t>(), read.data_ptr<int64_t>() + read.numel()));
}

Prompts::Prompts(std::string name, torch::Tensor tokens, std::vector<int64_t> offsets)
    : path_(std::move(name)), tokens_(std::move(tokens)), offsets_(std::move(offsets)) {
  check_layout();
}

void Prompts::check_layout() const {
  const std::vector<int64_t>& at = offsets_;
  const std::string& path = path_;
  if (at.size() < 2) bad_prompts(path, "no prompt (offsets need rows + 1 values)");
  if (at.front() != 0) bad_prompts(path, fmt::format("offsets[0] is {}, not 0", at.front()));
  for (size_t i = 0; i + 1 < at.size(); ++i) {
    if (at[i + 1] <= at[i]) {
      bad_prompts(path, fmt::format("row {} is empty or its offsets decrease (offsets[{}] = {}, "
                                    "offsets[{}] = {}): every prompt needs a token",
                                    i, i, at[i], i + 1, at[i + 1]));
    }
  }
  if (at.back() != tokens_.numel()) {
    bad_prompts(path, fmt::format("the last offset is {}, but 'tokens' holds {} ids", at.back(),
                                  tokens_.numel()));
  }
  if (tokens_.numel() > 0 && tokens_.min().item<int64_t>() < 0) {
    bad_prompts(path, "a token id is negative");
  }
}

void Prompts::check_fit(int64_t vocab, int64_t context) const {
  for (int64_t r = 0; r < rows(); ++r) {
    if (length(r) > context) {
      bad_prompts(path_, fmt::format("row {} has {} tokens, more than the model's context of {} "
                                     "(model.block, else data.block)",
                                     r, length(r), context));
    }
    const int64_t largest = row(r).max().item<int64_t>();
    if (largest >= vocab) {
      bad_prompts(path_, fmt::format("row {} holds token id {}, outside the model's vocabulary of "
                                     "{}",
                                     r, largest, vocab));
    }
  }
}

uint64_t Prompts::fingerprint() const {
  // FNV-1a over the ids' and the offsets' bytes.
  uint64_t hash = 14695981039346656037ULL;
  auto add = [&hash](const void* data, size_t bytes) {
    const auto* at = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) hash = (hash ^ at[i]) * 1099511628211ULL;
  };
  const torch::Tensor ids = tokens_.contiguous();
  add(ids.data_ptr<int64_t>(), static_cast<size_t>(ids.numel()) * sizeof(int64_t));
  add(offsets_.data(), offsets_.size() * sizeof(int64_t));
  return hash;
}

torch::Tensor Prompts::row(int64_t row) const {
  return tokens_.narrow(0, offsets_[row], length(row));
}

}  // namespace ddpt
