#include "optim/sharded_optimizer.hpp"

#include "optim/optimizer.hpp"
#include "util/error.hpp"
#include "util/host_read.hpp"

namespace ddpt {
namespace {

// A leaf tensor of its own over elements [first, first + numel) of `param`'s memory: not an
// autograd view of the parameter, so the optimizer treats it as a parameter in its own right,
// and its in-place update lands in the parameter.
torch::Tensor alias_of(const torch::Tensor& param, int64_t first, int64_t numel) {
  if (!param.is_contiguous()) {
    throw Error("ZeRO-1 needs contiguous parameters", ExitCode::kInternal, Raised::kAllRanks);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor alias = torch::empty({0}, param.options().requires_grad(false));
  alias.set_(param.storage(), param.storage_offset() + first, {numel}, {1});
  return alias;
}

}  // namespace

ShardedOptimizer::ShardedOptimizer(const OptimizerSpec& config, std::vector<NamedTensor> params,
                                   Reducer& reducer)
    : config_(config),
      params_(std::move(params)),
      reducer_(reducer),
      piece_index_(params_.size(), -1),
      steps_(params_.size(), 0) {
  if (!reducer_.sharded()) {
    throw Error("ShardedOptimizer needs a reduce-scattering reducer", ExitCode::kInternal,
                Raised::kAllRanks);
  }
  std::vector<torch::Tensor> values;
  std::vector<bool> decayed;
  for (size_t b = 0; b < reducer_.shards().size(); ++b) {
    for (const ShardPiece& spec : reducer_.shards()[b].pieces) {
      const torch::Tensor& param = params_[spec.param].tensor;
      // ZeRO-3: the values live in this rank's shard, not in the (released) parameter.
      const torch::Tensor value =
          reducer_.parameters_sharded()
              ? alias_of(reducer_.parameter_shard(b), spec.block_offset, spec.numel)
              : alias_of(param, spec.param_offset, spec.numel);
      Piece piece{spec.param, spec.param_offset, value};
      piece.value.mutable_grad() =
          reducer_.shard_gradient(b).narrow(0, spec.block_offset, spec.numel);
      piece_index_[spec.param] = static_cast<int>(pieces_.size());
      values.push_back(piece.value);
      decayed.push_back(is_decayed(param));
      pieces_.push_back(std::move(piece));
    }
  }
  optimizer_ = make_optimizer(config_, values, decayed);
}

const ShardedOptimizer::Piece* ShardedOptimizer::piece_of(size_t param) const {
  return piece_index_[param] < 0 ? nullptr : &pieces_[static_cast<size_t>(piece_index_[param])];
}

bool ShardedOptimizer::keeps_state() const {
  return config_.type == OptimizerType::kAdamW || config_.momentum > 0;
}

void ShardedOptimizer::step() {
  optimizer_->step();
  reducer_.all_gather_parameters();
  for (auto& steps : steps_) ++steps;
  has_state_ = has_state_ || keeps_state();
}

int64_t ShardedOptimizer::updated_values() const {
  int64_t values = 0;
  for (const auto& piece : pieces_) values += piece.value.numel();
  return values;
}

void ShardedOptimizer::save(StateWriter& root) const {
  const auto group = root.group("optimizer");
  group->scalar("type", std::string(choice_name(config_.type)));
  if (!has_state_) return;
  auto& state = optimizer_->state();
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& param = params_[i].tensor;
    const Piece* piece = piece_of(i);
    torch::optim::OptimizerParamState* held =
        piece ? state.at(state_key(state, piece->value)).get() : nullptr;
    // Every rank writes every field of every parameter (collective); a rank without a piece
    // writes nothing into it.
    auto part = [&](const torch::Tensor& field) {
      return piece ? field : torch::empty({0}, param.options().requires_grad(false));
    };
    const int64_t first = piece ? piece->first : 0;
    const auto fields = group->group(params_[i].name);
    if (config_.type == OptimizerType::kAdamW) {
      auto* adamw = static_cast<torch::optim::AdamWParamState*>(held);
      fields->tensor("step", torch::tensor({steps_[i]}, torch::kLong));
      fields->tensor_part("exp_avg", param.sizes().vec(), first,
                          part(adamw ? adamw->exp_avg() : torch::Tensor()));
      fields->tensor_part("exp_avg_sq", param.sizes().vec(), first,
                          part(adamw ? adamw->exp_avg_sq() : torch::Tensor()));
    } else {
      auto* sgd = static_cast<torch::optim::SGDParamState*>(held);
      fields->tensor_part("momentum_buffer", param.sizes().vec(), first,
                          part(sgd ? sgd->momentum_buffer() : torch::Tensor()));
    }
  }
}

void ShardedOptimizer::load(const StateReader& root) {
  const auto group = root.group("optimizer");
  const std::string type = group->string_scalar("type");
  if (type != choice_name(config_.type)) {
    throw DataError(
        "/optimizer was written by " + type + ", this run uses " + choice_name(config_.type),
        Raised::kAllRanks);
  }
  auto& state = optimizer_->state();
  state.clear();
  has_state_ = false;
  std::fill(steps_.begin(), steps_.end(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!group->has(params_[i].name)) continue;  // no state yet for this parameter
    const auto fields = group->group(params_[i].name);
    const Piece* piece = piece_of(i);
    auto read = [&](const std::string& field) {
      if (!fields->has(field)) {
        throw DataError("optimizer state of '" + params_[i].name + "' lacks " + field,
                        Raised::kAllRanks);
      }
      return fields->tensor_part(field, piece->first, piece->value.numel())
          .to(piece->value.device());
    };
    if (config_.type == OptimizerType::kAdamW) {
      if (!fields->has("step")) continue;
      steps_[i] = read_int(fields->tensor("step").view({-1})[0]);
      has_state_ = true;
      if (!piece) continue;
      auto s = std::make_unique<torch::optim::AdamWParamState>();
      s->step(steps_[i]);
      s->exp_avg(read("exp_avg"));
      s->exp_avg_sq(read("exp_avg_sq"));
      state[state_key(state, piece->value)] = std::move(s);
    } else if (fields->has("momentum_buffer")) {
      has_state_ = true;
      if (!piece) continue;
      auto s = std::make_unique<torch::optim::SGDParamState>();
      s->momentum_buffer(read("momentum_buffer"));
      state[state_key(state, piece->value)] = std::move(s);
    }
  }
}

}  // namespace ddpt
