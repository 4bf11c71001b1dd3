// How gradients are grouped into buckets: a pure function shared by the MPI and NCCL paths.
// Parameters are taken in reverse registration order (roughly the order backward produces their
// gradients), and a bucket closes once it reaches its byte cap, as PyTorch DDP's reducer does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddpt {

struct BucketSpec {
  std::vector<size_t> params;    // indices into the parameter list, in bucket order
  std::vector<int64_t> offsets;  // element offset of each parameter in the bucket buffer
  int64_t numel = 0;             // elements in the bucket
};

struct ParamInfo {
  int64_t numel = 0;
  int64_t element_size = 4;  // bytes
  int dtype_key = 0;         // parameters of different dtypes never share a bucket
};

// Buckets in launch order. Every parameter lands in exactly one bucket, never split; a bucket
// closes as soon as it holds at least its cap (the first bucket's cap is `first_cap_bytes`).
// With `large_alone`, a parameter of at least `cap_bytes` closes the open bucket first and has one
// of its own (ZeRO-2 reduces such a bucket without a pooled buffer).
std::vector<BucketSpec> plan_buckets(const std::vector<ParamInfo>& params, int64_t first_cap_bytes,
                                     int64_t cap_bytes, bool large_alone = false);

int64_t mib_to_bytes(double mib);

}  // namespace ddpt
