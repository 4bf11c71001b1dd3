#include "state/checkpointed.hpp"

#include <fmt/format.h>

#include "util/error.hpp"

namespace ddpt {

torch::Tensor stored_as(const torch::Tensor& stored, const torch::Tensor& target,
                        const std::string& name) {
  if (stored.numel() != target.numel()) {
    throw DataError(
        fmt::format("dataset '{}' holds {} values; the model's tensor [{}] needs {}", name,
                    stored.numel(), fmt::join(target.sizes(), ", "), target.numel()),
        Raised::kAllRanks);
  }
  return stored.reshape(target.sizes());
}

}  // namespace ddpt
