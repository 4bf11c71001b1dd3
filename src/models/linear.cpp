#include "models/linear.hpp"

#include <ATen/record_function.h>

#include "models/cpu_gemm.hpp"
#include "util/autocast_settings.hpp"
#include "util/gradients_in_place.hpp"

namespace ddpt {
namespace {

bool cpu_float(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat && t.layout() == torch::kStrided;
}

// A product's result: uninitialised where the GEMM writes all of it (beta = 0), zeros where an
// empty inner dimension leaves it untouched.
torch::Tensor product_result(const torch::Tensor& like, int64_t inner) {
  return inner > 0 ? torch::empty_like(like) : torch::zeros_like(like);
}

// y [M, out] = x [M, in] W^T + b on the CPU GEMM, for contiguous x and weight; bias may be
// undefined.
torch::Tensor gemm_product(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias) {
  const int64_t rows = x.size(0), in = x.size(1), out = weight.size(0);
  torch::Tensor y;
  float beta = 0.0f;
  if (bias.defined()) {
    // The bias enters as C's start value (beta = 1): one pass that the GEMM makes anyway. A copy
    // always: for one row the broadcast bias is contiguous already, and contiguous() would hand
    // back the parameter itself for the GEMM to write into.
    y = torch::empty({rows, out}, x.options());
    y.copy_(bias.unsqueeze(0).expand({rows, out}));
    beta = 1.0f;
  } else {
    y = in > 0 ? torch::empty({rows, out}, x.options()) : torch::zeros({rows, out}, x.options());
  }
  if (rows > 0 && out > 0 && in > 0) {
    cpu_sgemm(false, true, rows, out, in, 1.0f, x.data_ptr<float>(), in, weight.data_ptr<float>(),
              in, beta, y.data_ptr<float>(), out);
  }
  return y;
}

torch::Tensor gemm_forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_in,
                           const torch::Tensor& weight_in, const torch::Tensor& bias) {
  // Named for profilers (the backward shows as its autograd node; this forward would not show).
  RECORD_FUNCTION("ddpt::linear_forward", std::vector<c10::IValue>());
  const torch::Tensor x = x_in.contiguous();
  const torch::Tensor weight = weight_in.contiguous();
  torch::Tensor y = gemm_product(x, weight, bias);
  ctx->save_for_backward({x, weight});
  // The parameter itself (not a contiguous copy), whose .grad the backward may write into.
  if (weight_in.is_leaf() && weight_in.requires_grad()) ctx->saved_data["weight"] = weight_in;
  return y;
}

// The weight's .grad, where the running backward hands it over to be written whole
// (util/gradients_in_place.hpp): a contiguous float32 matrix of the weight's shape that holds
// nothing yet in this step. Else undefined, and the gradient is returned for autograd to add.
torch::Tensor weight_grad_to_overwrite(torch::autograd::AutogradContext* ctx) {
  GradientSlots* slots = GradientsInPlace::slots();
  if (slots == nullptr) return {};
  const auto found = ctx->saved_data.find("weight");
  if (found == ctx->saved_data.end()) return {};
  const torch::Tensor weight = found->second.toTensor();
  const torch::Tensor& grad = weight.grad();
  if (!grad.defined() || !cpu_float(grad) || !grad.is_contiguous() ||
      grad.sizes() != weight.sizes() || !slots->claim_for_overwrite(grad)) {
    return {};
  }
  return grad;
}

// dx = dy W, dW = dy^T x, db = the sum of dy over rows: each only where it is needed.
torch::autograd::variable_list gemm_backward(torch::autograd::AutogradContext* ctx,
                                             const torch::Tensor& grad, bool has_bias) {
  torch::autograd::variable_list grads(has_bias ? 3 : 2);
  if (!grad.defined()) return grads;
  const torch::autograd::variable_list saved = ctx->get_saved_variables();
  const torch::Tensor& x = saved[0];
  const torch::Tensor& weight = saved[1];
  const torch::Tensor dy = grad.contiguous();
  const int64_t rows = x.size(0), in = x.size(1), out = weight.size(0);
  const bool products = rows > 0 && in > 0 && out > 0;
  if (ctx->needs_input_grad(0)) {
    grads[0] = product_result(x, out);
    if (products) {
      cpu_sgemm(false, false, rows, in, out, 1.0f, dy.data_ptr<float>(), out,
                weight.data_ptr<float>(), in, 0.0f, grads[0].data_ptr<float>(), in);
    }
  }
  const torch::Tensor weight_grad =
      ctx->needs_input_grad(1) ? weight_grad_to_overwrite(ctx) : torch::Tensor();
  if (weight_grad.defined()) {
    // Written into .grad by the product itself (beta = 0); the weight's AccumulateGrad then
    // receives no gradient, adds nothing, and still runs its hooks (the reducer's).
    if (products) {
      cpu_sgemm(true, false, out, in, rows, 1.0f, dy.data_ptr<float>(), out, x.data_ptr<float>(),
                in, 0.0f, weight_grad.data_ptr<float>(), in);
    } else {
      weight_grad.zero_();
    }
  } else if (ctx->needs_input_grad(1)) {
    grads[1] = product_result(weight, rows);
    if (products) {
      cpu_sgemm(true, false, out, in, rows, 1.0f, dy.data_ptr<float>(), out, x.data_ptr<float>(),
                in, 0.0f, grads[1].data_ptr<float>(), in);
    }
  }
  if (has_bias && ctx->needs_input_grad(2)) grads[2] = dy.sum(0);
  return grads;
}

// Two functions because a custom autograd function takes no undefined tensor (LibTorch 1.13
// asks every tensor argument for its device).
class CpuGemmLinear : public torch::autograd::Function<CpuGemmLinear> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    return gemm_forward(ctx, x, weight, bias);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    return gemm_backward(ctx, grad_outputs[0], true);
  }
};

class CpuGemmLinearNoBias : public torch::autograd::Function<CpuGemmLinearNoBias> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight) {
    return gemm_forward(ctx, x, weight, {});
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    return gemm_backward(ctx, grad_outputs[0], false);
  }
};

torch::Tensor gemm_linear(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias) {
  // Without gradients (evaluation, generation) the product alone: an autograd function's apply
  // would still build its context and save the inputs, a cost that rivals a small layer's GEMM
  // when generation runs one token per forward.
  if (!torch::GradMode::is_enabled())
    return gemm_product(x.contiguous(), weight.contiguous(), bias);
  return bias.defined() ? CpuGemmLinear::apply(x, weight, bias)
                        : CpuGemmLinearNoBias::apply(x, weight);
}

}  // namespace

bool linear_uses_cpu_gemm(const torch::Tensor& x, const torch::Tensor& weight,
                          const torch::Tensor& bias) {
  // Under CPU autocast LibTorch's linear runs in bfloat16: that is autocast's to decide.
  return cpu_gemm_available() && cpu_float(x) && cpu_float(weight) &&
         (!bias.defined() || cpu_float(bias)) && x.dim() >= 1 && weight.dim() == 2 &&
         !autocast_enabled(c10::kCPU);
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  if (!linear_uses_cpu_gemm(x, weight, bias)) {
    // at::linear, not the C++ frontend's torch::nn::functional::linear: LibTorch 1.13's transposes
    // the weight before its product, and autocast casts that transposed view anew at every use (a
    // view is never cached), a copy the product then saves for backward. at::linear hands autocast
    // the weight itself, whose cast autocast caches and ZeRO-3 makes and releases with the weight's
    // unit (ddp/unit_casts.hpp). The same product, on the same values.
    return at::linear(x, weight,
                      bias.defined() ? c10::optional<torch::Tensor>(bias) : c10::nullopt);
  }
  if (x.dim() == 2) return gemm_linear(x, weight, bias);
  // [..., in] as rows of a matrix, and the result back in the input's leading shape.
  std::vector<int64_t> shape = x.sizes().vec();
  const torch::Tensor y = gemm_linear(x.reshape({-1, x.size(-1)}), weight, bias);
  shape.back() = weight.size(0);
  return y.view(shape);
}

}  // namespace ddpt
