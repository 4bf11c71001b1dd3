#include "optim/optimizer_state.hpp"

#include "util/error.hpp"
#include "util/host_read.hpp"

namespace ddpt {
namespace {

torch::Tensor step_tensor(int64_t step) {
  return torch::tensor({step}, torch::kLong);
}

}  // namespace

std::vector<NamedTensor> export_optimizer_state(torch::optim::Optimizer& optimizer,
                                                const std::vector<NamedTensor>& params) {
  std::vector<NamedTensor> out;
  auto& state = optimizer.state();
  for (const auto& p : params) {
    const auto found = state.find(state_key(state, p.tensor));
    if (found == state.end()) continue;
    if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(found->second.get())) {
      out.push_back({p.name + "/step", step_tensor(adamw->step())});
      out.push_back({p.name + "/exp_avg", adamw->exp_avg()});
      out.push_back({p.name + "/exp_avg_sq", adamw->exp_avg_sq()});
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(found->second.get())) {
      if (sgd->momentum_buffer().defined()) {
        out.push_back({p.name + "/momentum_buffer", sgd->momentum_buffer()});
      }
    } else {
      throw Error("optimizer state of an unknown kind for '" + p.name + "'", ExitCode::kInternal,
                  Raised::kThisRank);
    }
  }
  return out;
}

int64_t optimizer_state_bytes(torch::optim::Optimizer& optimizer) {
  int64_t bytes = 0;
  for (const auto& entry : optimizer.state()) {
    if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(entry.second.get())) {
      bytes += adamw->exp_avg().nbytes() + adamw->exp_avg_sq().nbytes();
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(entry.second.get())) {
      if (sgd->momentum_buffer().defined()) bytes += sgd->momentum_buffer().nbytes();
    }
  }
  return bytes;
}

void import_optimizer_state(torch::optim::Optimizer& optimizer,
                            const std::vector<NamedTensor>& params,
                            const std::function<torch::Tensor(const std::string&)>& read) {
  auto& state = optimizer.state();
  state.clear();
  const bool adamw = dynamic_cast<torch::optim::AdamW*>(&optimizer) != nullptr;
  for (const auto& p : params) {
    auto field = [&](const std::string& name) {
      torch::Tensor t = read(p.name + "/" + name);
      return t.defined() ? t.to(p.tensor.device()).view_as(p.tensor).clone() : t;
    };
    if (adamw) {
      const torch::Tensor step = read(p.name + "/step");
      if (!step.defined()) continue;  // no state yet for this parameter
      auto s = std::make_unique<torch::optim::AdamWParamState>();
      s->step(read_int(step.view({-1})[0]));
      s->exp_avg(field("exp_avg"));
      s->exp_avg_sq(field("exp_avg_sq"));
      if (!s->exp_avg().defined() || !s->exp_avg_sq().defined()) {
        throw DataError("optimizer state of '" + p.name + "' is incomplete (AdamW moments)",
                        Raised::kAllRanks);
      }
      state[state_key(state, p.tensor)] = std::move(s);
    } else {
      const torch::Tensor momentum = field("momentum_buffer");
      if (!momentum.defined()) continue;
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(momentum);
      state[state_key(state, p.tensor)] = std::move(s);
    }
  }
}

void OptimizerCheckpoint::save(StateWriter& root) const {
  const auto group = root.group("optimizer");
  group->scalar("type", type_);
  std::string current;
  std::unique_ptr<StateWriter> param;
  for (const auto& t : export_optimizer_state(optimizer_, params_)) {
    const auto slash = t.name.rfind('/');  // "param/field"
    if (t.name.substr(0, slash) != current) {
      current = t.name.substr(0, slash);
      param = group->group(current);
    }
    param->tensor(t.name.substr(slash + 1), t.tensor);
  }
}

void OptimizerCheckpoint::load(const StateReader& root) {
  const auto group = root.group("optimizer");
  const std::string type = group->string_scalar("type");
  if (type != type_) {
    throw DataError("/optimizer was written by " + type + ", this run uses " + type_,
                    Raised::kAllRanks);
  }
  import_optimizer_state(optimizer_, params_, [&](const std::string& name) {
    const auto slash = name.rfind('/');
    const std::string param = name.substr(0, slash);
    if (!group->has(param)) return torch::Tensor();
    const auto fields = group->group(param);
    const std::string field = name.substr(slash + 1);
    return fields->has(field) ? fields->tensor(field) : torch::Tensor();
  });
}

}  // namespace ddpt
