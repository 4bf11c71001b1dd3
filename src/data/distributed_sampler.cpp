#include "data/distributed_sampler.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include "util/error.hpp"

namespace ddpt {
namespace {
// Separates the epoch-order stream from other uses of the same seed (data generation).
constexpr uint64_t kEpochSeedStride = 0x9E3779B97F4A7C15ull;  // golden-ratio constant
}  // namespace

DistributedSampler::DistributedSampler(const SamplerSpec& spec) : spec_(spec) {
  global_batch_ = spec.batch_size * spec.grad_accum * spec.world_size;
  steps_per_epoch_ = spec.dataset_size / global_batch_;  // the incomplete last batch is dropped
  if (steps_per_epoch_ == 0) {
    throw ConfigError("the dataset has " + std::to_string(spec.dataset_size) +
                      " samples, fewer than one global batch of " + std::to_string(global_batch_) +
                      " (train.batch_size x train.grad_accum x ranks)");
  }
}

torch::Tensor DistributedSampler::epoch_permutation(int64_t epoch) const {
  const uint64_t seed =
      static_cast<uint64_t>(spec_.seed) + kEpochSeedStride * static_cast<uint64_t>(epoch + 1);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randperm(spec_.dataset_size, gen, torch::TensorOptions().dtype(torch::kLong));
}

torch::Tensor DistributedSampler::indices(int64_t step, int64_t micro) {
  const int64_t epoch = epoch_of(step);
  if (epoch != cached_epoch_) {
    cached_permutation_ = epoch_permutation(epoch);
    cached_epoch_ = epoch;
  }
  const int64_t within = step % steps_per_epoch_;
  const int64_t offset =
      within * global_batch_ + (micro * spec_.world_size + spec_.rank) * spec_.batch_size;
  return cached_permutation_.narrow(0, offset, spec_.batch_size);
}

}  // namespace ddpt
