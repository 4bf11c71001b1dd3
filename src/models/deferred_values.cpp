#include "models/deferred_values.hpp"

#include <algorithm>
#include <unordered_set>

#include "runtime/process_tuning.hpp"
#include "util/error.hpp"
#include "util/generator_state.hpp"
#include "util/releasable_storage.hpp"

namespace ddpt {
namespace {

at::Generator global_generator() {
  return at::detail::getDefaultCPUGenerator();
}

// The leaf's own initialisation, as its constructor ran it; empty for a kind not known here.
std::function<void()> leaf_reset(const std::shared_ptr<torch::nn::Module>& leaf) {
  namespace nn = torch::nn;
  if (auto linear = std::dynamic_pointer_cast<nn::LinearImpl>(leaf)) {
    return [linear] { linear->reset_parameters(); };
  }
  if (auto conv = std::dynamic_pointer_cast<nn::Conv2dImpl>(leaf)) {
    return [conv] { conv->reset_parameters(); };
  }
  if (auto embedding = std::dynamic_pointer_cast<nn::EmbeddingImpl>(leaf)) {
    return [embedding] { embedding->reset_parameters(); };
  }
  if (auto norm = std::dynamic_pointer_cast<nn::LayerNormImpl>(leaf)) {
    return [norm] { norm->reset_parameters(); };
  }
  if (auto batch_norm = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>(leaf)) {
    return [batch_norm] { batch_norm->reset_parameters(); };
  }
  return {};
}

}  // namespace

torch::Tensor DeferredValues::generator_now() {
  return generator_state(global_generator());
}

void DeferredValues::add_module(torch::nn::Module& module, torch::Tensor state) {
  std::vector<std::function<void()>> resets;
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (!m->children().empty() || m->parameters(/*recurse=*/false).empty()) continue;
    resets.push_back(leaf_reset(m));
    if (!resets.back()) {
      throw Error("DeferredValues: no replay of the initialisation of " + m->name(),
                  ExitCode::kInternal, Raised::kAllRanks);
    }
  }
  add({module.parameters(), std::move(state), [resets] {
         for (const auto& reset : resets) reset();
       }});
}

void DeferredValues::materialize(const std::vector<torch::Tensor>& params) const {
  std::unordered_set<const c10::TensorImpl*> wanted;
  for (const torch::Tensor& p : params) {
    if (!storage_held(p)) wanted.insert(p.unsafeGetTensorImpl());
  }
  if (wanted.empty()) return;
  const torch::Tensor before = generator_now();
  torch::NoGradGuard no_grad;
  for (const Draw& draw : draws_) {
    const bool needed = std::any_of(draw.params.begin(), draw.params.end(), [&](const auto& p) {
      return wanted.count(p.unsafeGetTensorImpl()) > 0;
    });
    if (!needed) continue;
    for (const torch::Tensor& p : draw.params) restore_storage(p);
    if (draw.state.defined()) set_generator_state(global_generator(), draw.state);
    draw.run();
  }
  set_generator_state(global_generator(), before);
}

torch::Tensor UnitValues::before() const {
  return values_ == ParameterValues::kDeferred ? DeferredValues::generator_now() : torch::Tensor();
}

void UnitValues::built(torch::nn::Module& unit, torch::Tensor state) const {
  if (values_ == ParameterValues::kDeferred) deferred_.add_module(unit, std::move(state));
  if (values_ != ParameterValues::kInitialised) release_parameters(unit);
}

void release_parameters(torch::nn::Module& module) {
  for (const torch::Tensor& p : module.parameters()) release_storage(p);
  // malloc keeps freed memory (runtime/process_tuning.cpp), and a freed block does not serve the
  // next one of its size (LibTorch's aligned allocations need a little more): without this, each
  // unit built after another takes new memory, and the building holds most of the model after all.
  return_freed_memory();
}

}  // namespace ddpt
