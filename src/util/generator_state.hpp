// A LibTorch random generator's state, read and set under the generator's own lock (LibTorch's
// rule: kernels draw from it on other threads, as dropout on the intra-op threads does). Used by
// the checkpointed RNG state (rng_state.cpp) and the batch-size search's undo of its trials.
#pragma once

#include <torch/torch.h>

namespace ddpt {

torch::Tensor generator_state(at::Generator generator);  // a handle: copies share the generator
void set_generator_state(at::Generator generator, const torch::Tensor& state);

}  // namespace ddpt
