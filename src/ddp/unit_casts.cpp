#include "ddp/unit_casts.hpp"

#include <ATen/autocast_mode.h>

#include "util/autocast_settings.hpp"

namespace ddpt {

void UnitCasts::cast(size_t bucket, const torch::Tensor& gathered,
                     const std::vector<torch::Tensor>& params,
                     const std::vector<int64_t>& offsets) {
  const c10::DeviceType type = gathered.device().type();
  // Autocast caches the casts of fp32 weights only, and only while its cache is on.
  if (!autocast_enabled(type) || !at::autocast::is_autocast_cache_enabled() ||
      gathered.scalar_type() != torch::kFloat) {
    return;
  }
  const c10::ScalarType dtype = autocast_dtype(type);
  torch::Tensor& flat = flats_[bucket];
  if (!flat.defined() || flat.scalar_type() != dtype) {
    flat = released_tensor(gathered.numel(), gathered.options().dtype(dtype));
  }
  memory_.restore(flat);
  {
    torch::NoGradGuard no_grad;
    flat.copy_(gathered);
  }
  for (size_t k = 0; k < params.size(); ++k) {
    const torch::Tensor& param = params[k];
    // The cache's entry for the weight (made now, or made by an earlier call of the unit in this
    // forward): the cast autocast hands the unit's operations.
    torch::Tensor cast = at::autocast::cached_cast(dtype, param, type);
    if (cast.scalar_type() != dtype || cast.is_same(param)) continue;  // not a weight it casts
    cast.set_data(flat.narrow(0, offsets[k], param.numel()).view(param.sizes()));
  }
}

void UnitCasts::restore(size_t bucket, const torch::Tensor& gathered) {
  torch::Tensor& flat = flats_[bucket];
  // Only the buffer itself refers to its memory where nothing saved a cast (activation
  // checkpointing casts again as it recomputes; a forward without autograd saves nothing).
  if (!flat.defined() || flat.storage().use_count() <= 1) return;
  memory_.restore(flat);
  torch::NoGradGuard no_grad;
  flat.copy_(gathered);
}

void UnitCasts::release(size_t bucket) {
  const torch::Tensor& flat = flats_[bucket];
  if (flat.defined() && storage_held(flat)) memory_.release(flat);
}

}  // namespace ddpt
