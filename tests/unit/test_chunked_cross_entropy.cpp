// The chunked next-token loss (models/chunked_cross_entropy.hpp) against the plain one: the
// cross-entropy of the full logits. In fp32 the two differ only in the order of their sums, so
// the loss and every gradient agree to rtol 1e-5 (atol 1e-7); under bf16 autocast both round the
// products to bf16, and agree to 2% of the gradients' norm.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/dataset.hpp"
#include "models/autocast.hpp"
#include "models/chunked_cross_entropy.hpp"
#include "models/gpt.hpp"
#include "step/task_loss.hpp"

namespace ddpt {
namespace {

namespace F = torch::nn::functional;

struct LossAndGrads {
  torch::Tensor loss;
  std::vector<torch::Tensor> grads;
};

// `loss` of fresh copies of `inputs` (each with requires_grad), and the gradients it leaves.
template <typename LossOf>
LossAndGrads loss_and_grads(const std::vector<torch::Tensor>& inputs, LossOf loss_of) {
  std::vector<torch::Tensor> leaves;
  for (const auto& t : inputs) leaves.push_back(t.detach().clone().requires_grad_(true));
  LossAndGrads out;
  out.loss = loss_of(leaves);
  out.loss.backward();
  for (const auto& leaf : leaves) out.grads.push_back(leaf.grad());
  return out;
}

void expect_close(const LossAndGrads& chunked, const LossAndGrads& plain) {
  EXPECT_TRUE(torch::allclose(chunked.loss, plain.loss, 1e-5, 1e-7))
      << chunked.loss.item<double>() << " vs " << plain.loss.item<double>();
  ASSERT_EQ(chunked.grads.size(), plain.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    ASSERT_TRUE(chunked.grads[i].defined()) << "gradient " << i;
    EXPECT_TRUE(torch::allclose(chunked.grads[i], plain.grads[i], 1e-5, 1e-7))
        << "gradient " << i << ": max difference "
        << (chunked.grads[i] - plain.grads[i]).abs().max().item<double>();
  }
}

TEST(ChunkedCrossEntropy, EqualsTheLossOfTheFullLogitsAndItsGradients) {
  torch::manual_seed(3);
  const torch::Tensor hidden = torch::randn({37, 16});
  const torch::Tensor weight = torch::randn({50, 16});
  const torch::Tensor targets = torch::randint(50, {37}, torch::kLong);
  const LossAndGrads plain = loss_and_grads({hidden, weight}, [&](const auto& x) {
    return F::cross_entropy(x[0].matmul(x[1].t()), targets);
  });
  // Blocks that divide the rows unevenly, one row at a time, and all rows in one block.
  for (const int64_t rows : {8, 1, 37, 100}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    expect_close(loss_and_grads({hidden, weight},
                                [&](const auto& x) {
                                  return chunked_cross_entropy(x[0], x[1], targets, rows);
                                }),
                 plain);
  }
}

TEST(ChunkedCrossEntropy, ScalesWithTheIncomingGradient) {
  torch::manual_seed(4);
  const torch::Tensor hidden = torch::randn({9, 4});
  const torch::Tensor weight = torch::randn({7, 4});
  const torch::Tensor targets = torch::randint(7, {9}, torch::kLong);
  expect_close(loss_and_grads({hidden, weight},
                              [&](const auto& x) {
                                return 3 * chunked_cross_entropy(x[0], x[1], targets, 4);
                              }),
               loss_and_grads({hidden, weight}, [&](const auto& x) {
                 return 3 * F::cross_entropy(x[0].matmul(x[1].t()), targets);
               }));
}

// Every parameter's gradient, the loss computed by `loss_of(model)`.
template <typename LossOf>
LossAndGrads model_loss_and_grads(const GptSpec& spec, LossOf loss_of) {
  torch::manual_seed(5);
  Gpt model(spec);
  LossAndGrads out;
  out.loss = loss_of(model);
  out.loss.backward();
  for (const auto& p : model.named_parameters()) out.grads.push_back(p.tensor.grad());
  return out;
}

TEST(ChunkedCrossEntropy, GptLossEqualsTheTaskLossTiedAndUntied) {
  for (const bool tie : {true, false}) {
    SCOPED_TRACE(tie ? "tied head" : "lm_head");
    // vocab 20, block 8, 2 layers of 2 heads, 16 wide, no dropout.
    const GptSpec spec{20, 8, 2, 2, 16, 0.0, tie};
    torch::manual_seed(6);
    const torch::Tensor tokens = torch::randint(20, {3, 8}, torch::kLong);
    const torch::Tensor targets = torch::randint(20, {3, 8}, torch::kLong);
    DatasetInfo info;
    info.task = Task::kNextToken;
    info.outputs = 20;
    const LossAndGrads plain = model_loss_and_grads(
        spec, [&](Gpt& model) { return task_loss(info, model.forward(tokens), targets); });
    const LossAndGrads chunked = model_loss_and_grads(
        spec, [&](Gpt& model) { return *model.chunked_loss(tokens, targets, 5); });
    expect_close(chunked, plain);
  }
}

// Under bf16 autocast the blocks' products run in bf16 as the plain head's does.
TEST(ChunkedCrossEntropy, UnderBf16AutocastFollowsThePlainLoss) {
  torch::manual_seed(7);
  const torch::Tensor hidden = torch::randn({64, 32});
  const torch::Tensor weight = torch::randn({40, 32}) * 0.2;
  const torch::Tensor targets = torch::randint(40, {64}, torch::kLong);
  auto with_autocast = [&](auto loss_of) {
    return loss_and_grads({hidden, weight}, [&](const auto& x) {
      const AutocastScope autocast(Precision::kBf16, torch::kCPU);
      return loss_of(x);
    });
  };
  const LossAndGrads plain = with_autocast([&](const auto& x) {
    return F::cross_entropy(x[0].matmul(x[1].t()).to(torch::kFloat), targets);
  });
  const LossAndGrads chunked =
      with_autocast([&](const auto& x) { return chunked_cross_entropy(x[0], x[1], targets, 24); });
  EXPECT_NEAR(chunked.loss.item<double>(), plain.loss.item<double>(),
              2e-2 * plain.loss.item<double>());
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    EXPECT_EQ(chunked.grads[i].scalar_type(), torch::kFloat);
    const double error = (chunked.grads[i] - plain.grads[i]).norm().item<double>();
    EXPECT_LT(error, 2e-2 * plain.grads[i].norm().item<double>()) << "gradient " << i;
  }
}

TEST(ChunkedCrossEntropy, RefusesMismatchedShapes) {
  const torch::Tensor targets = torch::zeros({4}, torch::kLong);
  EXPECT_ANY_THROW(chunked_cross_entropy(torch::zeros({4, 3}), torch::zeros({5, 2}), targets, 2));
  EXPECT_ANY_THROW(chunked_cross_entropy(torch::zeros({4, 3}), torch::zeros({5, 3}), targets, 0));
}

}  // namespace
}  // namespace ddpt
