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
  // Elements [first, first + out.numel()) of parameter `name`, flattened row-major as the model
  // keeps it, into `out`: a 1-D contiguous float32 tensor on the host.
  virtual void read(const std::string& name, int64_t first, torch::Tensor out) = 0;
};

}  // namespace ddpt
