#include "train/rng_state.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

namespace ddpt {

void CpuRngState::save(StateWriter& root) const {
  root.group("rng")->rank_row("torch_cpu", at::detail::getDefaultCPUGenerator().get_state());
}

void CpuRngState::load(const StateReader& root) {
  if (root.saved_world_size() != root.world_size()) return;
  const torch::Tensor rows = root.group("rng")->rank_rows("torch_cpu");
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to it
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(rows[root.rank()].clone());
}

}  // namespace ddpt
