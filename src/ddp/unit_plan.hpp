// ZeRO-3's units: the groups of parameters gathered together before a part of the model runs and
// released after it. A built-in model names its blocks (models/model.hpp, unit_prefixes: "h.0.",
// "h.1.", ...); each block is a unit, and the parameters of no block (embeddings, final norm,
// head) form the root unit, held from the start of a forward to the end of its backward.
// A block is one gradient bucket as well, so that its gradients are reduce-scattered as soon as
// its backward is done and its gathered parameters can go at the same moment; except that a
// parameter of at least the bucket cap is a bucket of its own, which borrows no pooled buffer
// (ddp/reducer.hpp: the pool's buffers are the size of the largest bucket). Each of the root's
// parameters is a bucket of its own, in the order backward finishes them: those registered after
// the blocks (final norm, head) first, those registered before them (embeddings) last. As one
// bucket the root would borrow a pooled buffer at the start of backward and hold it to the end,
// and its embedding would make every pooled buffer as large as itself; alone, a parameter
// borrows none (ddp/reducer.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ddp/bucket_plan.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

struct UnitPlan {
  size_t units = 0;                   // blocks, then the root unit (index units - 1)
  std::vector<size_t> unit_of_param;  // by parameter index
  // Buckets in launch order (the order backward finishes them): the root's output side, the
  // blocks from last to first, the root's input side, a bucket per root parameter; none empty.
  std::vector<BucketSpec> buckets;
  std::vector<size_t> unit_of_bucket;
  std::vector<std::vector<size_t>> buckets_of_unit;  // by unit
  size_t root() const { return units - 1; }
};

// The units of parameters `names` (registration order, each tensor once) with `numels` elements,
// from the model's block prefixes: a parameter is in the first block whose prefix its name starts
// with, else in the root unit. Within a bucket, parameters lie in reverse registration order, as
// plan_buckets() lays them out.
// `large`: elements from which a parameter is a bucket of its own.
UnitPlan plan_units(const std::vector<std::string>& names, const std::vector<int64_t>& numels,
                    const std::vector<std::string>& block_prefixes, int64_t large);
// The same from the parameters themselves.
UnitPlan plan_units(const std::vector<NamedTensor>& params,
                    const std::vector<std::string>& block_prefixes, int64_t large);

}  // namespace ddpt
