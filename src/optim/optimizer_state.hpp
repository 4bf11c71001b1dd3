// The optimizer's per-parameter state (SGD momentum buffers; AdamW step counts and moments) as
// named tensors, for checkpoints: "<parameter>/<field>".
#pragma once

#include <torch/torch.h>

#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "state/checkpointed.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

// The key of `param`'s entry in an optimizer's state map. LibTorch 1.x keys optimizer state by the
// parameter's TensorImpl address as a string; 2.x by the address itself. Either way the key comes
// from the live parameter.
template <class StateMap>
typename StateMap::key_type state_key(const StateMap& /*state*/, const torch::Tensor& param) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;  // what LibTorch 1.x's c10::guts::to_string wrote
    key << param.unsafeGetTensorImpl();
    return key.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

// State of every parameter that has some (none before the first step).
std::vector<NamedTensor> export_optimizer_state(torch::optim::Optimizer& optimizer,
                                                const std::vector<NamedTensor>& params);

// Bytes of the state tensors the optimizer holds now (moments, momentum buffers).
int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer);

// Rebuilds the state from `read(name)`, which returns an undefined tensor for a missing name.
// Fields are copied, so the state owns its memory.
void import_optimizer_state(torch::optim::Optimizer& optimizer,
                            const std::vector<NamedTensor>& params,
                            const std::function<torch::Tensor(const std::string&)>& read);

// The optimizer in a checkpoint: /optimizer, with the attribute `type` (a checkpoint loads only
// into the same kind of optimizer) and one group per parameter holding its fields.
class OptimizerCheckpoint : public Checkpointed {
 public:
  OptimizerCheckpoint(torch::optim::Optimizer& optimizer, std::vector<NamedTensor> params,
                      std::string type)
      : optimizer_(optimizer), params_(std::move(params)), type_(std::move(type)) {}
  void save(StateWriter& root) const override;
  void load(const StateReader& root) override;

 private:
  torch::optim::Optimizer& optimizer_;
  std::vector<NamedTensor> params_;
  std::string type_;  // "sgd" | "adamw"
};

}  // namespace ddpt
