#include "setup/memory_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "config/ddp_defaults.hpp"
#include "runtime/host_memory.hpp"
#include "setup/make_model.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

struct MemoryNeed {
  double bytes = 0;
  std::string what;       // the options and what they ask for, for the message
  double parameters = 0;  // the model's parameter values (the need a ZeRO stage changes), or 0
};

std::string bytes_text(double bytes) {
  // human_bytes takes an int64_t; a deck of 1e19 parameters goes beyond it (2^63 B = 8 EiB).
  constexpr double kInt64Limit = 0x1p63;
  if (bytes >= kInt64Limit) return fmt::format("{:.3g} EiB", bytes / 0x1p60);
  return human_bytes(static_cast<int64_t>(bytes));
}

// Synthetic datasets are generated into memory on every rank (files are read batch by batch).
std::optional<MemoryNeed> synthetic_data_need(const DataConfig& data, const DatasetInfo& info) {
  const double samples = static_cast<double>(data.samples);
  if (data.type == DataType::kSyntheticTokens) {
    const double stride = static_cast<double>(data.stride > 0 ? data.stride : data.block);
    const double bytes = samples * stride * sizeof(int64_t);
    return MemoryNeed{bytes, fmt::format("data.samples = {} windows of synthetic tokens ({})",
                                         data.samples, bytes_text(bytes))};
  }
  if (data.type == DataType::kHdf5 || data.type == DataType::kTokens) return std::nullopt;
  double elements = 1;
  for (const int64_t d : info.sample_shape) elements *= static_cast<double>(d);
  const double bytes = samples * elements * sizeof(float);
  return MemoryNeed{bytes, fmt::format("data.samples = {} synthetic samples of {} values ({})",
                                       data.samples, elements, bytes_text(bytes))};
}

// Bytes per parameter value a rank holds on the CPU under `plan`: the fp32 weights, the gradients
// (ZeRO-2 and 3: 1/N of them), the optimizer moments (ZeRO-1 to 3: 1/N of them) and the moving
// average of train.ema_decay (ZeRO-3: 1/N of it).
// Pooled buckets, ZeRO-3's gathered units and activations come on top: this is a lower bound.
// The weights count whole even where ZeRO shares one copy per node; under ZeRO-3 a built-in model
// is built a unit at a time (models/deferred_values.hpp), so they count 1/N. (A TorchScript model
// is loaded whole, but its size is not known here: no check.)
double bytes_per_value(const Config& config, const ShardingPlan& plan) {
  const double moments =
      config.optim.type == OptimizerType::kAdamW ? 2 : (config.optim.momentum > 0 ? 1 : 0);
  const double shards = static_cast<double>(plan.shards);
  const double gradients = plan.gradients_sharded() ? 1 / shards : 1;
  const double optimizer = plan.optimizer_sharded() ? moments / shards : moments;
  const double average = config.train.ema_decay > 0 ? 1 : 0;
  if (plan.parameters_sharded()) return sizeof(float) * (2 + moments + average) / shards;
  return sizeof(float) * (1 + gradients + optimizer + average);
}

// On the CPU, the model's fp32 weights and gradients and this rank's optimizer moments.
std::optional<MemoryNeed> model_need(const Config& config, const ShardingPlan& plan,
                                     const DatasetInfo& info) {
  const std::optional<PlannedModelSize> model = planned_model_size(config.model, info);
  if (!model) return std::nullopt;
  const double bytes = model->parameters * bytes_per_value(config, plan);
  return MemoryNeed{
      bytes,
      fmt::format("{} gives a model of {:.3g} parameters ({} with {})", model->options,
                  model->parameters, bytes_text(bytes),
                  config.train.ema_decay > 0 ? "gradients, optimizer state and moving average"
                                             : "gradients and optimizer state"),
      model->parameters};
}

// What to change: the lowest ddp.zero above the deck's whose need fits, or smaller sizes.
std::string advice(const Config& config, const ShardingPlan& plan,
                   const std::vector<MemoryNeed>& needs, double total, int64_t per_rank) {
  const auto model = std::find_if(needs.begin(), needs.end(),
                                  [](const MemoryNeed& n) { return n.parameters > 0; });
  if (model == needs.end() || plan.shards == 1) return "make it smaller";
  for (int64_t level = plan.requested + 1; level <= kHighestZeroStage; ++level) {
    const double then =
        total - model->bytes +
        model->parameters * bytes_per_value(config, plan.at_stage(static_cast<ZeroStage>(level)));
    if (then <= static_cast<double>(per_rank)) {
      return fmt::format("with ddp.zero = {} it needs {} per rank and fits: set ddp.zero = {}",
                         level, bytes_text(then), level);
    }
  }
  return fmt::format("not even ddp.zero = {} fits at {} ranks: make it smaller, or use more ranks",
                     kHighestZeroStage, plan.shards);
}

}  // namespace

void check_host_memory(const Config& config, const ShardingPlan& plan, const DatasetInfo& data,
                       const Job& job, HostGroup& group) {
  std::vector<MemoryNeed> needs;
  if (auto need = synthetic_data_need(config.data, data)) needs.push_back(*need);
  if (job.device.device.is_cpu()) {
    if (auto need = model_need(config, plan, data)) needs.push_back(*need);
  }
  // Per rank: the ranks of a node share its memory, and a limit of the process's own is each
  // rank's. The smallest of any rank, so that every rank takes the same decision.
  std::optional<HostMemory> memory = host_memory_available();
  bool shared_by_node = memory.has_value();
  int64_t mine = memory ? memory->available_bytes / job.topology.local_size
                        : std::numeric_limits<int64_t>::max();
  if (const std::optional<HostMemory> own = process_memory_left();
      own && own->available_bytes < mine) {
    mine = own->available_bytes;
    memory = own;
    shared_by_node = false;
  }
  const int64_t per_rank = group.min("host memory check", mine);
  double total = 0;
  for (const MemoryNeed& need : needs) total += need.bytes;
  if (total <= static_cast<double>(per_rank)) return;

  std::sort(needs.begin(), needs.end(),
            [](const MemoryNeed& a, const MemoryNeed& b) { return a.bytes > b.bytes; });
  std::string asked = needs.front().what;
  for (size_t i = 1; i < needs.size(); ++i) {
    if (needs[i].bytes > total / 10) asked += "; and " + needs[i].what;  // parts that matter
  }
  throw OutOfMemoryError(
      fmt::format("the deck asks for more memory than a rank has: {}; that is at least {} per "
                  "rank, and a rank has about {} (from {}); {}",
                  asked, bytes_text(total), bytes_text(static_cast<double>(per_rank)),
                  memory
                      ? memory->source + (shared_by_node ? ", shared by the ranks of a node" : "")
                      : "no memory figure",
                  advice(config, plan, needs, total, per_rank)),
      Raised::kAllRanks);
}

}  // namespace ddpt
