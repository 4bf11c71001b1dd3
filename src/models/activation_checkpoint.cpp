#include "models/activation_checkpoint.hpp"

#include <ATen/CPUGeneratorImpl.h>
#ifdef DDPTRAIN_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "models/autocast.hpp"
#include "util/generator_state.hpp"

namespace ddpt {
namespace {

// The random generators a block on `device` draws from: the CPU's, and the device's.
struct GeneratorStates {
  torch::Tensor cpu;
  torch::Tensor device;

  static GeneratorStates of(const c10::Device& device) {
    GeneratorStates states;
    states.cpu = generator_state(at::detail::getDefaultCPUGenerator());
#ifdef DDPTRAIN_TORCH_CUDA
    if (device.is_cuda()) {
      states.device = generator_state(at::cuda::detail::getDefaultCUDAGenerator(device.index()));
    }
#else
    (void)device;
#endif
    return states;
  }
  void restore(const c10::Device& device) const {
    set_generator_state(at::detail::getDefaultCPUGenerator(), cpu);
#ifdef DDPTRAIN_TORCH_CUDA
    if (device.is_cuda()) {
      set_generator_state(at::cuda::detail::getDefaultCUDAGenerator(device.index()), this->device);
    }
#else
    (void)device;
#endif
  }
};

// What the second run needs, kept by the autograd node between forward and backward.
struct Recipe final : torch::CustomClassHolder {
  BlockForward block;
  std::vector<torch::Tensor> buffers;
  torch::Tensor input;  // detached
  GeneratorStates generators;
  AutocastState autocast;
};

class Checkpoint final : public torch::autograd::Function<Checkpoint> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                               c10::intrusive_ptr<Recipe> recipe) {
    recipe->input = input.detach();
    recipe->generators = GeneratorStates::of(input.device());
    recipe->autocast = AutocastState::current(input.device().type());
    torch::Tensor output = recipe->block(input);  // autograd records nothing inside forward
    ctx->saved_data["recipe"] = c10::IValue::make_capsule(std::move(recipe));
    return output;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto recipe =
        c10::static_intrusive_pointer_cast<Recipe>(ctx->saved_data["recipe"].toCapsule());
    const c10::Device device = recipe->input.device();
    torch::Tensor input = recipe->input.detach().requires_grad_(true);
    torch::Tensor output;
    // The forward's generators, autocast and buffers for the second run; this backward's
    // afterwards.
    std::vector<torch::Tensor> buffers_now;
    {
      torch::NoGradGuard no_grad;
      for (const auto& b : recipe->buffers) buffers_now.push_back(b.clone());
    }
    {
      const GeneratorStates now = GeneratorStates::of(device);
      recipe->generators.restore(device);
      {
        const AutocastState::Restored autocast(recipe->autocast);
        const torch::AutoGradMode grad(true);
        output = recipe->block(input);
      }
      now.restore(device);
    }
    torch::autograd::backward({output}, {grad_outputs.at(0)});
    // After the backward that may still read them (batch norm saves its statistics).
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers_now.size(); ++i) recipe->buffers[i].copy_(buffers_now[i]);
    return {input.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed(const BlockForward& block, const torch::Tensor& input,
                           const std::vector<torch::Tensor>& buffers) {
  if (!torch::GradMode::is_enabled() || !input.requires_grad()) return block(input);
  auto recipe = c10::make_intrusive<Recipe>();
  recipe->block = block;
  recipe->buffers = buffers;
  return Checkpoint::apply(input, std::move(recipe));
}

}  // namespace ddpt
