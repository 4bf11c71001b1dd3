#include "step/task_loss.hpp"

#include <fmt/format.h>

#include "util/error.hpp"

namespace ddpt {
namespace {

namespace F = torch::nn::functional;

// Outputs and targets as the loss functions take them: [units, classes] and [units] for the
// cross-entropy tasks, equal shapes for regression.
std::pair<torch::Tensor, torch::Tensor> loss_operands(const DatasetInfo& info,
                                                      const torch::Tensor& outputs,
                                                      const torch::Tensor& targets) {
  const int64_t batch = targets.size(0);
  auto mismatch = [&](const std::string& expected) {
    return ConfigError(fmt::format(
        "the model's output has shape [{}] but {} data with {} outputs needs {}",
        fmt::join(outputs.sizes(), ", "), task_name(info.task), info.outputs, expected));
  };
  switch (info.task) {
    case Task::kClassification:
      if (outputs.dim() != 2 || outputs.size(0) != batch || outputs.size(1) != info.outputs) {
        throw mismatch(fmt::format("[{}, {}] (batch, classes)", batch, info.outputs));
      }
      return {outputs, targets};
    case Task::kRegression:
      if (outputs.numel() != targets.numel() || outputs.size(0) != batch) {
        throw mismatch(fmt::format("[{}, {}] (batch, outputs)", batch, info.outputs));
      }
      return {outputs.reshape(targets.sizes()), targets};
    case Task::kNextToken:
      // A model vocabulary padded past the data's (GPT-2's 50257 -> 50304, for faster matrix
      // products) is fine: the extra ids never occur as targets, and the softmax learns that.
      if (outputs.dim() != 3 || outputs.size(0) != batch || outputs.size(1) != targets.size(1) ||
          outputs.size(2) < info.outputs) {
        throw mismatch(fmt::format("[{}, {}, {}] (batch, block, vocab of at least the data's)",
                                   batch, targets.size(1), info.outputs));
      }
      return {outputs.reshape({-1, outputs.size(2)}), targets.reshape({-1})};
  }
  throw mismatch("a known task");
}

}  // namespace

torch::Tensor task_loss(const DatasetInfo& info, const torch::Tensor& outputs,
                        const torch::Tensor& targets) {
  const auto [out, tgt] = loss_operands(info, outputs, targets);
  if (info.task == Task::kRegression) return F::mse_loss(out, tgt);
  return F::cross_entropy(out, tgt);
}

torch::Tensor task_sums(const DatasetInfo& info, const torch::Tensor& outputs,
                        const torch::Tensor& targets) {
  const auto [out, tgt] = loss_operands(info, outputs, targets);
  torch::Tensor loss_sum;
  torch::Tensor correct;
  if (info.task == Task::kRegression) {
    loss_sum = F::mse_loss(out, tgt, F::MSELossFuncOptions().reduction(torch::kSum));
    correct = torch::zeros({}, out.options());
  } else {
    loss_sum = F::cross_entropy(out, tgt, F::CrossEntropyFuncOptions().reduction(torch::kSum));
    correct = out.argmax(1).eq(tgt).sum();
  }
  const auto units = static_cast<double>(tgt.numel());
  return torch::stack({loss_sum.to(torch::kDouble), correct.to(torch::kDouble),
                       torch::full({}, units, loss_sum.options().dtype(torch::kDouble))});
}

}  // namespace ddpt
