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
// Root parameters that forward may use on some ranks and not others (inside an `if` or a loop on
// the data: Model::conditional_parameters) come last of all. A rank that got no gradient for one
// launches its bucket, and every bucket after it, only when its backward ends (every rank
// launches in bucket order; the reducer then reduces it as zeros). Before a block's bucket that
// held the ranks apart: those that had the gradient launched on and, their pool full, waited
// inside backward for a reduction the other rank would start only after its backward's remaining
// gathers, which wait for them (a hang). Last, nothing follows them.
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
  // blocks from last to first, the root's input side, a bucket per root parameter; then the root
  // parameters that forward may use on some ranks only; none empty.
  std::vector<BucketSpec> buckets;
  std::vector<size_t> unit_of_bucket;
  std::vector<std::vector<size_t>> buckets_of_unit;  // by unit
  size_t root() const { return units - 1; }
};

// The units of parameters `names` (registration order, each tensor once) with `numels` elements,
// from the model's block prefixes: a parameter is in the first block whose prefix its name starts
// with, else in the root unit. Within a bucket, parameters lie in reverse registration order, as
// plan_buckets() lays them out.
// `large`: elements from which a parameter is a bucket of its own. `last`: names of root
// parameters whose buckets come after every other (above).
UnitPlan plan_units(const std::vector<std::string>& names, const std::vector<int64_t>& numels,
                    const std::vector<std::string>& block_prefixes, int64_t large,
                    const std::vector<std::string>& last = {});
// The same from the parameters themselves.
UnitPlan plan_units(const std::vector<NamedTensor>& params,
                    const std::vector<std::string>& block_prefixes, int64_t large,
                    const std::vector<std::string>& last = {});

}  // namespace ddpt
