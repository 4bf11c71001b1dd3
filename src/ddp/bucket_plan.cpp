#include "ddp/bucket_plan.hpp"

#include <cmath>
#include <map>

namespace ddpt {

int64_t mib_to_bytes(double mib) {
  return static_cast<int64_t>(std::llround(mib * 1024.0 * 1024.0));
}

std::vector<BucketSpec> plan_buckets(const std::vector<ParamInfo>& params, int64_t first_cap_bytes,
                                     int64_t cap_bytes, bool large_alone) {
  std::vector<BucketSpec> buckets;
  struct Open {
    BucketSpec spec;
    int64_t bytes = 0;
  };
  std::map<int, Open> open;  // one open bucket per dtype
  auto close = [&](Open& bucket) {
    if (!bucket.spec.params.empty()) buckets.push_back(std::move(bucket.spec));
    bucket = Open{};
  };
  for (size_t i = params.size(); i-- > 0;) {
    const ParamInfo& p = params[i];
    Open& bucket = open[p.dtype_key];
    // The bucket it would start is not the first one (an open bucket is before it), so the
    // every-bucket cap is what makes it large.
    if (large_alone && !bucket.spec.params.empty() && p.numel * p.element_size >= cap_bytes) {
      close(bucket);
    }
    bucket.spec.params.push_back(i);
    bucket.spec.offsets.push_back(bucket.spec.numel);
    bucket.spec.numel += p.numel;
    bucket.bytes += p.numel * p.element_size;
    const int64_t cap = buckets.empty() ? first_cap_bytes : cap_bytes;
    if (bucket.bytes >= cap) close(bucket);
  }
  for (auto& [key, bucket] : open) close(bucket);
  return buckets;
}

}  // namespace ddpt
