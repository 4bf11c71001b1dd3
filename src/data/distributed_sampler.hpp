// Which rows each rank trains on. One global permutation per epoch, drawn from (seed, epoch)
// alone; global step s of an epoch takes rows [s*G, (s+1)*G) of it, where
// G = world * batch * grad_accum, and rank r's micro-step m takes the B rows at
// offset (m * world + r) * B of that slice. So the union of all ranks' micro-batches is the global
// batch, every rank has the same number of steps, and the order never depends on the rank count.
#pragma once

#include <torch/torch.h>

namespace ddpt {

struct SamplerSpec {
  int64_t dataset_size = 0;
  int64_t batch_size = 1;  // per rank per micro-step
  int64_t grad_accum = 1;
  int world_size = 1;
  int rank = 0;
  int64_t seed = 0;
};

class DistributedSampler {
 public:
  explicit DistributedSampler(const SamplerSpec& spec);  // throws ConfigError if no step fits

  int64_t global_batch() const { return global_batch_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t epoch_of(int64_t step) const { return step / steps_per_epoch_; }
  // Row indices (int64) for this rank's micro-step `micro` of global optimizer step `step`.
  torch::Tensor indices(int64_t step, int64_t micro);
  // The whole epoch's global order (for tests and for resharding on resume).
  torch::Tensor epoch_permutation(int64_t epoch) const;

 private:
  SamplerSpec spec_;
  int64_t global_batch_ = 0;
  int64_t steps_per_epoch_ = 0;
  int64_t cached_epoch_ = -1;
  torch::Tensor cached_permutation_;
};

}  // namespace ddpt
