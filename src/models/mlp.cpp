#include "models/mlp.hpp"

#include <fmt/format.h>

#include "models/linear.hpp"

namespace ddpt {

Mlp::Mlp(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs) {
  int64_t width = inputs;
  for (const int64_t h : hidden) {
    net_->push_back(Linear(width, h));
    net_->push_back(torch::nn::ReLU());
    flops_ += 2.0 * static_cast<double>(width * h);
    width = h;
  }
  net_->push_back(Linear(width, outputs));
  flops_ += 2.0 * static_cast<double>(width * outputs);
  description_ = fmt::format("MLP {} -> [{}] -> {}", inputs, fmt::join(hidden, ", "), outputs);
}

double Mlp::parameter_count(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs) {
  double count = 0;
  double width = static_cast<double>(inputs);
  for (const int64_t h : hidden) {
    count += (width + 1) * static_cast<double>(h);  // weight and bias
    width = static_cast<double>(h);
  }
  return count + (width + 1) * static_cast<double>(outputs);
}

}  // namespace ddpt
