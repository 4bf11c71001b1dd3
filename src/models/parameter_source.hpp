// Where ZeRO-3 takes the trainable parameters' values from instead of the model's own
// initialisation: model.init's file, each rank reading only the pieces of the parameters it keeps
// (setup/initial_weights.hpp), never the whole model.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace ddpt {

class ParameterSource {
 public:
  virtual ~ParameterSource() = default;
  // Whether it holds the values of parameter `name` (else the model's own are kept:
  // model.init_skip).
  virtual bool holds(const std::string& name) const = 0;
  // Elements [first, first + count) of parameter `name`, flattened row-major as the model keeps
  // it, as a 1-D float32 tensor on the host.
  virtual torch::Tensor read(const std::string& name, int64_t first, int64_t count) = 0;
};

}  // namespace ddpt
