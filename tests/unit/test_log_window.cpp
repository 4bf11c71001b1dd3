// The metrics row in progress (run/log_window.hpp): the loss sum it keeps on the device must be
// the sum a double on the host would hold, bit for bit, across a checkpoint too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "run/log_window.hpp"

namespace ddpt {
namespace {

// Step losses as a training loop makes them: float scalars of mixed size.
std::vector<torch::Tensor> step_losses(int64_t count) {
  torch::manual_seed(7);
  const torch::Tensor values = torch::rand({count}) * torch::logspace(-3, 3, count);
  std::vector<torch::Tensor> losses;
  for (int64_t i = 0; i < count; ++i) losses.push_back(values[i].clone());
  return losses;
}

// What the loop summed before the sum moved to the device: each loss read back to a double.
double host_sum(const std::vector<torch::Tensor>& losses, size_t begin, size_t end,
                double start = 0) {
  double sum = start;
  for (size_t i = begin; i < end; ++i) sum += losses[i].item<double>();
  return sum;
}

TEST(LogWindow, SumsTheStepLossesInDoubleInStepOrder) {
  const std::vector<torch::Tensor> losses = step_losses(1000);
  LogWindow window;
  EXPECT_EQ(window.loss_sum_value(), 0.0);
  for (const torch::Tensor& loss : losses) window.add_loss(loss);
  EXPECT_EQ(window.loss_sum_value(), host_sum(losses, 0, losses.size()));
  // These losses tell a float sum from a double one, so the equality above has something to catch.
  float in_float = 0;
  for (const torch::Tensor& loss : losses) in_float += loss.item<float>();
  EXPECT_NE(static_cast<double>(in_float), window.loss_sum_value());
  // The step's tensor is left as it was.
  EXPECT_EQ(losses[0].scalar_type(), torch::kFloat);

  window.next_row();
  EXPECT_EQ(window.loss_sum_value(), 0.0);
  window.add_loss(losses[3]);
  EXPECT_EQ(window.loss_sum_value(), losses[3].item<double>());
}

TEST(LogWindow, AResumedWindowContinuesTheSameSum) {
  const std::vector<torch::Tensor> losses = step_losses(400);
  LogWindow whole;
  for (const torch::Tensor& loss : losses) whole.add_loss(loss);

  LogWindow first_half;
  for (size_t i = 0; i < 150; ++i) first_half.add_loss(losses[i]);
  first_half.steps = 150;
  // The checkpoint's row, read back as a one-rank run reads it.
  LogWindow resumed = LogWindow::from_rows(first_half.to_row().reshape({1, 4}), 0, 1);
  EXPECT_EQ(resumed.steps, 150);
  for (size_t i = 150; i < losses.size(); ++i) resumed.add_loss(losses[i]);
  EXPECT_EQ(resumed.loss_sum_value(), whole.loss_sum_value());
  EXPECT_EQ(resumed.loss_sum_value(),
            host_sum(losses, 150, losses.size(), host_sum(losses, 0, 150)));
}

TEST(LogWindow, ACopyDoesNotShareTheRunningSum) {
  const std::vector<torch::Tensor> losses = step_losses(3);
  LogWindow window;
  window.add_loss(losses[0]);
  const LogWindow saved = window;
  window.add_loss(losses[1]);
  window.add_loss(losses[2]);
  EXPECT_EQ(saved.loss_sum_value(), losses[0].item<double>());
  EXPECT_EQ(window.loss_sum_value(), host_sum(losses, 0, 3));
}

}  // namespace
}  // namespace ddpt
