#include "ddp/unit_plan.hpp"

#include <algorithm>
#include <functional>

namespace ddpt {

UnitPlan plan_units(const std::vector<std::string>& names, const std::vector<int64_t>& numels,
                    const std::vector<std::string>& block_prefixes, int64_t large,
                    const std::vector<std::string>& last) {
  UnitPlan plan;
  plan.units = block_prefixes.size() + 1;
  for (const std::string& name : names) {
    size_t unit = plan.root();
    for (size_t u = 0; u < block_prefixes.size(); ++u) {
      if (name.rfind(block_prefixes[u], 0) == 0) {
        unit = u;
        break;
      }
    }
    plan.unit_of_param.push_back(unit);
  }
  plan.buckets_of_unit.assign(plan.units, {});
  // The root's parameters registered before any block's: its input side.
  size_t first_block_param = names.size();
  for (size_t i = 0; i < names.size(); ++i) {
    if (plan.unit_of_param[i] != plan.root()) {
      first_block_param = i;
      break;
    }
  }
  // A bucket of `unit`'s parameters that `take` accepts, in reverse registration order.
  auto add_bucket = [&](size_t unit, const std::function<bool(size_t)>& take) {
    BucketSpec spec;
    for (size_t i = names.size(); i-- > 0;) {
      if (plan.unit_of_param[i] != unit || !take(i)) continue;
      spec.params.push_back(i);
      spec.offsets.push_back(spec.numel);
      spec.numel += numels[i];
    }
    if (spec.params.empty()) return;
    plan.buckets_of_unit[unit].push_back(plan.buckets.size());
    plan.unit_of_bucket.push_back(unit);
    plan.buckets.push_back(std::move(spec));
  };
  std::vector<char> late(names.size(), 0);
  for (size_t i = 0; i < names.size(); ++i) {
    late[i] = std::find(last.begin(), last.end(), names[i]) != last.end();
  }
  // A bucket per root parameter from `to` down to `from`, those in `last` only where `late`.
  auto add_root_buckets = [&](size_t from, size_t to, bool lasts) {
    for (size_t i = to; i-- > from;) {
      if (static_cast<bool>(late[i]) != lasts) continue;
      add_bucket(plan.root(), [i](size_t j) { return j == i; });
    }
  };
  add_root_buckets(first_block_param, names.size(), false);
  // A block's large parameters, then the rest of it: backward makes its gradients in about that
  // order (the block's last layer first).
  for (size_t u = block_prefixes.size(); u-- > 0;) {
    for (size_t i = names.size(); i-- > 0;) {
      if (numels[i] >= large) add_bucket(u, [i](size_t j) { return j == i; });
    }
    add_bucket(u, [&](size_t j) { return numels[j] < large; });
  }
  add_root_buckets(0, first_block_param, false);
  add_root_buckets(0, names.size(), true);
  return plan;
}

UnitPlan plan_units(const std::vector<NamedTensor>& params,
                    const std::vector<std::string>& block_prefixes, int64_t large,
                    const std::vector<std::string>& last) {
  std::vector<std::string> names;
  std::vector<int64_t> numels;
  for (const auto& p : params) {
    names.push_back(p.name);
    numels.push_back(p.tensor.numel());
  }
  return plan_units(names, numels, block_prefixes, large, last);
}

}  // namespace ddpt
