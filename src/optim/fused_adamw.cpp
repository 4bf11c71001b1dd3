#include "optim/fused_adamw.hpp"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "optim/optimizer_state.hpp"
#include "util/host_read.hpp"

namespace ddpt {
namespace {

struct AdamWScalars {
  float decay;  // 1 - lr x weight_decay
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float sqrt_bias_correction2;
  float eps;
  float neg_step_size;  // -lr / (1 - beta1^t)
  float grad_factor;    // 1 / the gate's divisor (clipping); 1 without
  bool fma;             // LibTorch's vector kernels fuse a + alpha x b (AVX2 and AVX-512 builds)
};

// One pass over [begin, end), with or without fused multiply-adds (a template parameter, so each
// loop vectorises without a branch inside).
template <bool kFma>
__attribute__((always_inline)) inline void adamw_pass(float* __restrict param,
                                                      const float* __restrict grad,
                                                      float* __restrict exp_avg,
                                                      float* __restrict exp_avg_sq, int64_t begin,
                                                      int64_t end, AdamWScalars s) {
  // Each line rounds where LibTorch's op sequence rounds (p.mul_, exp_avg.mul_(b1).add_(g, 1-b1),
  // exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2), sqrt / sqrt(bc2) + eps, p.addcdiv_(m, denom, -step));
  // the file is built with -ffp-contract=off so that only the fmas written here are fused.
  // Measured bit-identical to LibTorch 1.13's AdamW over 300 steps at every ATEN_CPU_CAPABILITY
  // (tests/unit/test_fused_adamw.cpp).
  for (int64_t i = begin; i < end; ++i) {
    const float g = grad[i] * s.grad_factor;  // exact for a factor of 1
    const float p = param[i] * s.decay;
    const float m_scaled = exp_avg[i] * s.beta1;
    const float m =
        kFma ? __builtin_fmaf(g, s.one_minus_beta1, m_scaled) : m_scaled + s.one_minus_beta1 * g;
    const float v_scaled = exp_avg_sq[i] * s.beta2;
    const float v = kFma ? __builtin_fmaf(s.one_minus_beta2 * g, g, v_scaled)
                         : v_scaled + s.one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = __builtin_sqrtf(v) / s.sqrt_bias_correction2 + s.eps;
    param[i] = p + s.neg_step_size * m / denom;
  }
}

// The fma pass runs only where the CPU has AVX2 and FMA (libtorch_uses_fma), so it is compiled for
// them alone; the plain pass for AVX2 and for the baseline, picked at load time, so the binary
// still runs on any x86-64 node. (target_clones("arch=haswell") would dispatch on the CPU model,
// not its features, and "avx2" alone leaves __builtin_fmaf a library call.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DDPT_FMA_TARGET __attribute__((target("avx2,fma")))
#define DDPT_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DDPT_FMA_TARGET
#define DDPT_CPU_CLONES
#endif
DDPT_FMA_TARGET void adamw_update_fma(float* __restrict param, const float* __restrict grad,
                                      float* __restrict exp_avg, float* __restrict exp_avg_sq,
                                      int64_t begin, int64_t end, AdamWScalars s) {
  adamw_pass<true>(param, grad, exp_avg, exp_avg_sq, begin, end, s);
}
DDPT_CPU_CLONES void adamw_update_plain(float* __restrict param, const float* __restrict grad,
                                        float* __restrict exp_avg, float* __restrict exp_avg_sq,
                                        int64_t begin, int64_t end, AdamWScalars s) {
  adamw_pass<false>(param, grad, exp_avg, exp_avg_sq, begin, end, s);
}

// Whether LibTorch's CPU kernels run with fused multiply-add: its AVX2 and AVX-512 kernels compute
// a + alpha x b as one fma, its default kernels as a multiply and an add. LibTorch picks them as
// at::native::get_cpu_capability() does (not exported from libtorch_cpu): ATEN_CPU_CAPABILITY if
// set, else AVX2 or better when the CPU has AVX2 and FMA.
bool libtorch_uses_fma() {
  static const bool fma = [] {
    const char* forced = std::getenv("ATEN_CPU_CAPABILITY");
    if (forced != nullptr && std::strcmp(forced, "default") == 0) return false;
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
  }();
  return fma;
}

bool fusable(const torch::Tensor& param) {
  return param.device().is_cpu() && param.scalar_type() == torch::kFloat && param.is_contiguous() &&
         param.grad().is_contiguous() && param.grad().scalar_type() == torch::kFloat &&
         !param.grad().is_sparse();
}

bool cuda_fusable(const torch::Tensor& param) {
#if TORCH_VERSION_MAJOR >= 2  // at::_fused_adamw_ came with 2.0
  return param.is_cuda() && param.scalar_type() == torch::kFloat &&
         param.grad().scalar_type() == torch::kFloat && !param.grad().is_sparse() &&
         param.grad().device() == param.device();
#else
  (void)param;
  return false;
#endif
}

// The parameter's AdamW state, made on first use (zero moments, step 0).
template <class StateMap>
torch::optim::AdamWParamState& adamw_state(StateMap& states, const torch::Tensor& p) {
  auto& slot = states[state_key(states, p)];
  if (!slot) {
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    slot = std::move(fresh);
  }
  return static_cast<torch::optim::AdamWParamState&>(*slot);
}

}  // namespace

torch::Tensor FusedAdamW::step(LossClosure closure) {
  bool any = false;
  bool cpu = true;
  bool cuda = true;
  for (const auto& group : param_groups_) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      any = true;
      cpu = cpu && fusable(p);
      cuda = cuda && cuda_fusable(p);
    }
  }
  if (any && !cpu && !cuda) return unfused_step(std::move(closure));
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  if (!any) return loss;
  torch::NoGradGuard no_grad;
  if (cpu) {
    cpu_step();
  } else {
    cuda_step();
  }
  found_inf_ = torch::Tensor();
  grad_divisor_ = torch::Tensor();
  return loss;
}

torch::Tensor FusedAdamW::unfused_step(LossClosure closure) {
  // LibTorch's step cannot be told to skip: the gate's flag is read here (a wait on a GPU).
  const torch::Tensor found_inf = std::exchange(found_inf_, torch::Tensor());
  const torch::Tensor divisor = std::exchange(grad_divisor_, torch::Tensor());
  if (found_inf.defined() && read_bool(found_inf != 0)) return torch::Tensor();
  if (divisor.defined()) {
    torch::NoGradGuard no_grad;
    for (auto& group : param_groups_) {
      for (auto& p : group.params()) {
        if (p.grad().defined()) p.mutable_grad().div_(divisor);
      }
    }
  }
  return torch::optim::AdamW::step(std::move(closure));
}

void FusedAdamW::gate_next_step(torch::Tensor found_inf, torch::Tensor grad_divisor) {
  found_inf_ = std::move(found_inf);
  grad_divisor_ = std::move(grad_divisor);
}

void FusedAdamW::settle_step_counts() {
  std::vector<torch::optim::AdamWParamState*> states;
  std::vector<DeviceStep*> devices;
  std::vector<torch::Tensor> counts;
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      const auto found = device_steps_.find(p.unsafeGetTensorImpl());
      if (found == device_steps_.end() || found->second.value < 0) continue;
      states.push_back(&adamw_state(state_, p));
      devices.push_back(&found->second);
      counts.push_back(found->second.count);
    }
  }
  if (counts.empty()) return;
  const torch::Tensor host = read_to_host(torch::stack(counts).to(torch::kDouble));
  for (size_t i = 0; i < counts.size(); ++i) {
    const auto count = static_cast<int64_t>(host.data_ptr<double>()[i]);
    states[i]->step(count);
    devices[i]->value = count;
  }
}

void FusedAdamW::cpu_step() {
  // The gate's flag and divisor are in this process's memory: read as the kernels would.
  if (found_inf_.defined() && found_inf_.data_ptr<float>()[0] != 0) return;
  const float grad_factor =
      grad_divisor_.defined() ? 1.0f / grad_divisor_.data_ptr<float>()[0] : 1.0f;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "FusedAdamW: amsgrad is not supported");
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = adamw_state(state_, p);
      state.step(state.step() + 1);
      const auto [beta1, beta2] = options.betas();
      const double bias_correction1 = 1 - std::pow(beta1, state.step());
      const double bias_correction2 = 1 - std::pow(beta2, state.step());
      AdamWScalars s{};
      s.decay = static_cast<float>(1 - options.lr() * options.weight_decay());
      s.beta1 = static_cast<float>(beta1);
      s.one_minus_beta1 = static_cast<float>(1 - beta1);
      s.beta2 = static_cast<float>(beta2);
      s.one_minus_beta2 = static_cast<float>(1 - beta2);
      s.sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2));
      s.eps = static_cast<float>(options.eps());
      s.neg_step_size = static_cast<float>(-options.lr() / bias_correction1);
      s.fma = libtorch_uses_fma();
      s.grad_factor = grad_factor;
      float* param = p.data_ptr<float>();
      const float* grad = p.grad().data_ptr<float>();
      float* exp_avg = state.exp_avg().data_ptr<float>();
      float* exp_avg_sq = state.exp_avg_sq().data_ptr<float>();
      // Chunks of 32 Ki elements: large enough to amortise a task, small enough to share.
      at::parallel_for(0, p.numel(), 32768, [&](int64_t begin, int64_t end) {
        if (s.fma) {
          adamw_update_fma(param, grad, exp_avg, exp_avg_sq, begin, end, s);
        } else {
          adamw_update_plain(param, grad, exp_avg, exp_avg_sq, begin, end, s);
        }
      });
    }
  }
}

void FusedAdamW::cuda_step() {
#if TORCH_VERSION_MAJOR >= 2
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    TORCH_CHECK(!options.amsgrad(), "FusedAdamW: amsgrad is not supported");
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, counts, advanced;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = adamw_state(state_, p);
      DeviceStep& device = device_steps_[p.unsafeGetTensorImpl()];
      if (!device.count.defined()) device.count = torch::empty({}, p.options());
      // One launch advances every count that followed the state; a count that did not (the
      // first step, a resume) is set from it.
      if (device.value == state.step()) {
        advanced.push_back(device.count);
      } else {
        device.count.fill_(static_cast<double>(state.step() + 1));
      }
      state.step(state.step() + 1);
      device.value = state.step();
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(state.exp_avg());
      exp_avg_sqs.push_back(state.exp_avg_sq());
      counts.push_back(device.count);
    }
    if (params.empty()) continue;
    if (!advanced.empty()) at::_foreach_add_(advanced, 1);
    const auto [beta1, beta2] = options.betas();
    std::optional<at::Tensor> grad_scale;
    std::optional<at::Tensor> found_inf;
    if (grad_divisor_.defined()) grad_scale = grad_divisor_;
    if (found_inf_.defined()) found_inf = found_inf_;
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, /*max_exp_avg_sqs=*/{}, counts,
                      options.lr(), beta1, beta2, options.weight_decay(), options.eps(),
                      /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
    // A skipped step does not count (as torch.optim's _fused_adamw after the kernel): the host's
    // counts run one ahead per skipped step until settle_step_counts().
    if (found_inf_.defined()) at::_foreach_add_(counts, found_inf_, -1);
  }
#endif
}

}  // namespace ddpt
