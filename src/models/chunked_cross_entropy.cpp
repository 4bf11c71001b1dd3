#include "models/chunked_cross_entropy.hpp"

#include <algorithm>

#include "models/cpu_gemm.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool contiguous_cpu_float(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat && t.is_contiguous();
}

// `out` (contiguous) = op(a) op(b), or += where `accumulate`; op transposes where asked. fp32 on
// the CPU runs the GEMM the built-in models' linear layers run (models/cpu_gemm.hpp), which beats
// LibTorch's matmul there; elsewhere (GPUs, autocast's bf16) LibTorch's product.
void product(const torch::Tensor& a, bool trans_a, const torch::Tensor& b, bool trans_b,
             torch::Tensor out, bool accumulate) {
  if (cpu_gemm_available() && contiguous_cpu_float(a) && contiguous_cpu_float(b) &&
      contiguous_cpu_float(out)) {
    cpu_sgemm(trans_a, trans_b, out.size(0), out.size(1), trans_a ? a.size(0) : a.size(1), 1.0f,
              a.data_ptr<float>(), a.size(1), b.data_ptr<float>(), b.size(1),
              accumulate ? 1.0f : 0.0f, out.data_ptr<float>(), out.size(1));
    return;
  }
  const torch::Tensor result = (trans_a ? a.t() : a).matmul(trans_b ? b.t() : b);
  if (accumulate) {
    out.add_(result.to(out.scalar_type()));
  } else {
    out.copy_(result);
  }
}

// The gradients are made in forward, block by block, while each block's logits exist (as Liger's
// fused linear cross-entropy does): d loss / d logits = (softmax - one_hot(target)) / N needs
// nothing that comes later, so backward only scales them by the incoming gradient, and the
// logits are made once, not again in backward.
class ChunkedCrossEntropy : public torch::autograd::Function<ChunkedCrossEntropy> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden,
                               const torch::Tensor& weight, const torch::Tensor& targets,
                               int64_t rows) {
    // The type the plain head's product would have: autocast's where it is on, else the inputs'
    // (a one-row product asks autocast, whose API differs between LibTorch versions).
    const torch::ScalarType type =
        hidden.narrow(0, 0, 1).matmul(weight.narrow(0, 0, 1).t()).scalar_type();
    const torch::Tensor head = weight.to(type).contiguous();
    const int64_t n = hidden.size(0);
    const bool grads = hidden.requires_grad() || weight.requires_grad();
    torch::Tensor loss_sum = torch::zeros({}, hidden.options().dtype(torch::kFloat));
    torch::Tensor grad_hidden = grads ? torch::empty_like(hidden) : torch::Tensor();
    torch::Tensor grad_weight =
        grads ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat))
              : torch::Tensor();
    for (int64_t first = 0; first < n; first += rows) {
      const int64_t count = std::min(rows, n - first);
      const torch::Tensor block = hidden.narrow(0, first, count).to(type).contiguous();
      const torch::Tensor target = targets.narrow(0, first, count).unsqueeze(1);
      torch::Tensor logits;
      if (type == torch::kFloat) {
        logits = torch::empty({count, head.size(0)}, block.options());
        product(block, false, head, true, logits, /*accumulate=*/false);
      } else {
        logits = block.matmul(head.t()).to(torch::kFloat);
      }
      const torch::Tensor lse = logits.logsumexp(1, /*keepdim=*/true);
      loss_sum += (lse - logits.gather(1, target)).sum();
      if (!grads) continue;
      // In place: the block's logits become its softmax, then d loss / d logits.
      logits.sub_(lse).exp_();
      logits.scatter_add_(1, target, -torch::ones({count, 1}, logits.options()));
      const torch::Tensor grad_logits = logits.div_(static_cast<double>(n)).to(type);
      product(grad_logits, false, head, false, grad_hidden.narrow(0, first, count), false);
      product(grad_logits, true, block, false, grad_weight, /*accumulate=*/true);
    }
    if (grads) {
      ctx->save_for_backward({grad_hidden, grad_weight.to(weight.scalar_type())});
    }
    return loss_sum / static_cast<double>(n);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& scale = grad_outputs[0];
    return {saved[0] * scale.to(saved[0].scalar_type()),
            saved[1] * scale.to(saved[1].scalar_type()), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor chunked_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& targets, int64_t rows) {
  if (hidden.dim() != 2 || weight.dim() != 2 || hidden.size(1) != weight.size(1) ||
      targets.dim() != 1 || targets.size(0) != hidden.size(0) || hidden.size(0) < 1 || rows < 1) {
    throw Error(
        "chunked_cross_entropy: expects hidden [N, C], weight [V, C], targets [N], N >= 1 "
        "and rows >= 1",
        ExitCode::kInternal, Raised::kThisRank);
  }
  return ChunkedCrossEntropy::apply(hidden, weight, targets, rows);
}

}  // namespace ddpt
