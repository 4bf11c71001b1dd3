#include "util/generator_state.hpp"

#include <mutex>

namespace ddpt {

torch::Tensor generator_state(at::Generator generator) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const torch::Tensor& state) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace ddpt
