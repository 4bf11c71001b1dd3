#include "state/rng_state.hpp"

#include <ATen/CPUGeneratorImpl.h>
#ifdef DDPTRAIN_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/generator_state.hpp"

namespace ddpt {
namespace {

// Sets `generator` to this rank's row of rng/NAME.
void restore_rank_row(const StateReader& root, const char* name, at::Generator generator) {
  const torch::Tensor rows = root.group("rng")->rank_rows(name);
  // A damaged checkpoint can hold another shape here: exit 3, not LibTorch's error.
  const int64_t state_bytes = generator_state(generator).numel();
  if (rows.size(0) != root.world_size() || rows.numel() != rows.size(0) * state_bytes ||
      rows.scalar_type() != torch::kUInt8) {
    throw DataError(fmt::format("dataset 'rng/{}' has shape [{}] of {}, not [{}, {}] of uint8",
                                name, fmt::join(rows.sizes(), ", "),
                                c10::toString(rows.scalar_type()), root.world_size(), state_bytes),
                    Raised::kAllRanks);
  }
  set_generator_state(generator, rows[root.rank()].clone());
}

}  // namespace

void CpuRngState::save(StateWriter& root) const {
  root.group("rng")->rank_row("torch_cpu", generator_state(at::detail::getDefaultCPUGenerator()));
}

void CpuRngState::load(const StateReader& root) {
  if (root.saved_world_size() != root.world_size()) return;
  restore_rank_row(root, "torch_cpu", at::detail::getDefaultCPUGenerator());
}

void CudaRngState::save(StateWriter& root) const {
#ifdef DDPTRAIN_TORCH_CUDA
  if (!device_.is_cuda()) return;
  root.group("rng")->rank_row(
      "torch_cuda", generator_state(at::cuda::detail::getDefaultCUDAGenerator(device_.index())));
#else
  (void)root;
#endif
}

void CudaRngState::load(const StateReader& root) {
#ifdef DDPTRAIN_TORCH_CUDA
  if (!device_.is_cuda() || root.saved_world_size() != root.world_size()) return;
  if (!root.has("rng") || !root.group("rng")->has("torch_cuda")) return;  // a CPU run's
  restore_rank_row(root, "torch_cuda", at::cuda::detail::getDefaultCUDAGenerator(device_.index()));
#else
  (void)root;
#endif
}

}  // namespace ddpt
