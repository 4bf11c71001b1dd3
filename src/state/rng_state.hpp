// The CPU random generator of this process (dropout, data order on the host), per rank in the
// checkpoint's /rng/torch_cpu row. Restored only when the world size is unchanged; otherwise each
// rank keeps the generator its seed gave it (resharded runs reseed per-rank randomness).
#pragma once

#include <torch/torch.h>

#include "state/checkpointed.hpp"

namespace ddpt {

class CpuRngState : public Checkpointed {
 public:
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;
};

// The CUDA random generator of this rank's GPU (dropout on the GPU: without it a resumed GPU run
// draws other masks than the run it continues), per rank in /rng/torch_cuda; written only by runs
// on GPUs, restored under the same rule as the CPU's, and only onto a GPU.
class CudaRngState : public Checkpointed {
 public:
  explicit CudaRngState(torch::Device device) : device_(device) {}
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  torch::Device device_;
};

}  // namespace ddpt
