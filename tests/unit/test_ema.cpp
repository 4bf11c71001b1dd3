// The moving average of the weights: the update formula, and swapping the averaged weights in
// for evaluation and back.
#include <gtest/gtest.h>

#include "optim/ema.hpp"

namespace ddpt {
namespace {

TEST(Ema, AverageFollowsTheFormulaAndSwapsInAndOut) {
  torch::Tensor w = torch::tensor({1.0, -2.0, 4.0});
  Ema ema({{"w", w}}, 0.9);
  const torch::Tensor start = w.clone();
  w.copy_(torch::tensor({2.0, 0.0, 4.0}));
  ema.update();  // 0.9 x start + 0.1 x w
  torch::Tensor expected = 0.9 * start + 0.1 * w;
  EXPECT_TRUE(torch::allclose(ema.averages()[0], expected, 1e-6, 1e-7));
  w.copy_(torch::tensor({3.0, 1.0, -1.0}));
  ema.update();
  expected = 0.9 * expected + 0.1 * w;
  EXPECT_TRUE(torch::allclose(ema.averages()[0], expected, 1e-6, 1e-7));

  const torch::Tensor live = w.clone();
  {
    EmaWeightsInUse averaged(&ema);
    EXPECT_TRUE(torch::allclose(w, expected, 1e-6, 1e-7));  // evaluation sees the average
  }
  EXPECT_TRUE(torch::equal(w, live));  // and training continues from its own weights
  EXPECT_TRUE(torch::allclose(ema.averages()[0], expected, 1e-6, 1e-7));
  EmaWeightsInUse nothing(nullptr);  // EMA off: no effect
  EXPECT_TRUE(torch::equal(w, live));
}

}  // namespace
}  // namespace ddpt
