// train.batch_size = auto: the largest batch per rank whose training step fits in GPU memory,
// found before training by trial steps (Trainer::trial_step: forward and backward of the dataset's
// first rows, with room held for the optimizer state that the first real step allocates).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/host_group.hpp"
#include "data/dataset.hpp"
#include "ddp/sharding_plan.hpp"
#include "models/model.hpp"
#include "step/trainer.hpp"

namespace ddpt {

// Most samples per rank that auto tries: past this, a bigger batch buys no speed worth the
// trial steps (and the banner says the limit was reached).
constexpr int64_t kMaxAutoBatch = 65536;

struct BatchSizeTrials {
  int64_t largest = 0;  // the largest size that fitted; 0 if not even 1 did
  int64_t limit = 0;    // the largest size that could be tried
  struct Trial {
    int64_t batch;
    bool fitted;
  };
  std::vector<Trial> trials;  // in the order tried

  // For the banner, e.g. "48 (tried 1 2 4 8 16 32 64x 48 56x 52x 50x 49x; x: did not fit)".
  std::string text() const;
};

// The largest b in [1, limit] with fits(b), for a `fits` that holds up to some size and not above
// it: doubles from 1 until a size does not fit or the limit is reached, then halves the gap
// between the largest size that fitted and the smallest that did not. About 2 log2(answer) calls.
BatchSizeTrials search_largest_batch(int64_t limit, const std::function<bool(int64_t)>& fits);

// Gives the caching allocator's free blocks back to the device (CUDA; nothing elsewhere): after a
// failed trial, so that the next one is not refused for fragments, and after a search.
void release_cached_device_memory(const torch::Device& device);

// Collective over `group` and `comm`, for train.batch_size = auto: the largest batch size per
// rank whose trial step fitted on every rank. After each trial the ranks agree (the smallest
// answer wins), so all of them try the same sizes and end with the same one. The trial trainer is
// built from `trainer` (the run's options, at one sample per rank) and the plan's trial form. The
// model's parameters and buffers, its gradients (none) and the random generators are as they
// were, so the run that follows is the run of a deck with that number written in.
// ConfigError (exit 2) off CUDA devices, where memory is not what limits a batch;
// OutOfMemoryError (exit 6) if not even one sample per rank fits.
// `trial_sample_limit`: a test's (FaultInjector::trial_sample_limit): trials of more samples fail
// as a full GPU would, on any device, so that the search runs on CPUs. `sharding`: the run's;
// the trials take its trial form (ShardingPlan::for_trial).
int64_t largest_batch_size(const TrainerOptions& trainer, const ShardingPlan& sharding,
                           Communicator& comm, HostGroup& group, Model& model, const Dataset& data,
                           std::optional<int64_t> trial_sample_limit = std::nullopt);

}  // namespace ddpt
