#include "models/deferred_values.hpp"

#include <algorithm>
#include <unordered_set>

#include "ddp/releasable_storage.hpp"
#include "runtime/process_tuning.hpp"
#include "util/error.hpp"
#include "util/generator_state.hpp"

namespace ddpt {
namespace {

at::Generator global_generator() {
  return at::detail::getDefaultCPUGenerator();
}

// The leaf's own initialisation, as its constructor ran it (`run`), or only whether this file
// knows the leaf's kind.
bool reset_leaf(torch::nn::Module& leaf, bool run) {
  namespace nn = torch::nn;
  if (auto* linear = dynamic_cast<nn::LinearImpl*>(&leaf)) {
    if (run) linear->reset_parameters();
  } else if (auto* conv = dynamic_cast<nn::Conv2dImpl*>(&leaf)) {
    if (run) conv->reset_parameters();
  } else if (auto* embedding = dynamic_cast<nn::EmbeddingImpl*>(&leaf)) {
    if (run) embedding->reset_parameters();
  } else if (auto* norm = dynamic_cast<nn::LayerNormImpl*>(&leaf)) {
    if (run) norm->reset_parameters();
  } else if (auto* batch_norm = dynamic_cast<nn::BatchNorm2dImpl*>(&leaf)) {
    if (run) batch_norm->reset_parameters();
  } else {
    return false;
  }
  return true;
}

}  // namespace

torch::Tensor DeferredValues::generator_now() {
  return generator_state(global_generator());
}

void DeferredValues::add_module(torch::nn::Module& module, torch::Tensor state) {
  std::vector<std::shared_ptr<torch::nn::Module>> leaves;
  for (const auto& m : module.modules(/*include_self=*/true)) {
    if (!m->children().empty() || m->parameters(/*recurse=*/false).empty()) continue;
    if (!reset_leaf(*m, /*run=*/false)) {
      throw Error("DeferredValues: no replay of the initialisation of " + m->name(),
                  ExitCode::kInternal, Raised::kAllRanks);
    }
    leaves.push_back(m);
  }
  add({module.parameters(), std::move(state), [leaves] {
         for (const auto& leaf : leaves) reset_leaf(*leaf, /*run=*/true);
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
