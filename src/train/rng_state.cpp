#include "train/rng_state.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>

#include <mutex>

#include "util/error.hpp"

namespace ddpt {

void CpuRngState::save(StateWriter& root) const {
  root.group("rng")->rank_row("torch_cpu", at::detail::getDefaultCPUGenerator().get_state());
}

void CpuRngState::load(const StateReader& root) {
  if (root.saved_world_size() != root.world_size()) return;
  const torch::Tensor rows = root.group("rng")->rank_rows("torch_cpu");
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to it
  // A damaged checkpoint can hold another shape here: exit 3, not LibTorch's error.
  const int64_t state_bytes = generator.get_state().numel();
  if (rows.size(0) != root.world_size() || rows.numel() != rows.size(0) * state_bytes ||
      rows.scalar_type() != torch::kUInt8) {
    throw DataError(fmt::format("dataset 'rng/torch_cpu' has shape [{}] of {}, not [{}, {}] of "
                                "uint8",
                                fmt::join(rows.sizes(), ", "), c10::toString(rows.scalar_type()),
                                root.world_size(), state_bytes),
                    Raised::kAllRanks);
  }
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(rows[root.rank()].clone());
}

}  // namespace ddpt
