#include "models/model.hpp"

namespace ddpt {

int64_t parameter_count(Model& model) {
  int64_t count = 0;
  for (const auto& p : model.named_parameters()) count += p.tensor.numel();
  return count;
}

void move_all_but_trainable(Model& model, torch::Device device) {
  torch::NoGradGuard no_grad;
  // set_data keeps each tensor's identity: the model's references see the moved memory.
  for (auto& p : model.named_parameters()) {
    if (!p.tensor.requires_grad()) p.tensor.set_data(p.tensor.to(device));
  }
  for (auto& b : model.named_buffers()) b.tensor.set_data(b.tensor.to(device));
}

}  // namespace ddpt
