// The CPU random generator of this process (dropout, data order on the host), per rank in the
// checkpoint's /rng/torch_cpu row. Restored only when the world size is unchanged; otherwise each
// rank keeps the generator its seed gave it (resharded runs reseed per-rank randomness).
#pragma once

#include "train/checkpointed.hpp"

namespace ddpt {

class CpuRngState : public Checkpointed {
 public:
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;
};

}  // namespace ddpt
