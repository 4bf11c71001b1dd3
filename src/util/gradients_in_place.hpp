// Leaf gradients written in place during a training backward: an operation that computes a
// leaf's whole gradient may write it straight into the leaf's .grad, instead of returning it for
// autograd to add there, when .grad holds nothing yet in this step.
//
// Why: autograd accumulates a leaf's gradient in three passes: zero_grad() fills .grad with zeros,
// the operation writes its result into a new tensor, and AccumulateGrad adds that into .grad (two
// reads and a write). The built-in models' linear layers compute the weight's gradient with a
// matrix product that can write into .grad directly (beta = 0 in the GEMM): one pass instead of
// three over most of a model's gradients (models/linear.cpp). In data-parallel training .grad is
// a view of a gradient bucket, and the reducer knows which slots of its buckets hold nothing yet
// in this step (ddp/reducer.hpp).
//
// Only a backward known to accumulate into .grad may allow it: torch::autograd::grad() returns
// gradients without touching .grad, and an operation writing there would be wrong. So the
// reducer's owner opens a GradientsInPlace scope around loss.backward() (DataParallel::backward),
// and nothing else does.
#pragma once

#include <torch/torch.h>

namespace ddpt {

// Who owns the .grad tensors of a backward and knows which of them hold nothing yet.
class GradientSlots {
 public:
  virtual ~GradientSlots() = default;
  // Whether `grad` (a leaf's .grad) is one of these slots and holds nothing yet in this step.
  // True hands the slot to the caller, who must then write all of it (a write, not an add);
  // the slot counts as written from then on. False: return the gradient as usual.
  virtual bool claim_for_overwrite(const torch::Tensor& grad) = 0;
};

class GradientsInPlace {
 public:
  explicit GradientsInPlace(GradientSlots& slots) : previous_(slots_) { slots_ = &slots; }
  ~GradientsInPlace() { slots_ = previous_; }
  GradientsInPlace(const GradientsInPlace&) = delete;
  GradientsInPlace& operator=(const GradientsInPlace&) = delete;

  // The slots of the backward running on this thread, or null outside a scope. LibTorch runs a
  // CPU graph's backward on the thread that called backward(), so the scope reaches its
  // operations.
  static GradientSlots* slots() { return slots_; }

 private:
  GradientSlots* previous_;
  static inline thread_local GradientSlots* slots_ = nullptr;
};

}  // namespace ddpt
