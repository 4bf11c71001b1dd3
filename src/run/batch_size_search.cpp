#include "run/batch_size_search.hpp"

#include <ATen/CPUGeneratorImpl.h>
#ifdef DDPTRAIN_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "step/trainer.hpp"
#include "util/check.hpp"
#include "util/error.hpp"
#include "util/generator_state.hpp"
#include "util/log.hpp"

namespace ddpt {
namespace {

// What the trial steps change and the run must not see: the random generators (dropout) and the
// buffers (batch-norm statistics). Parameters take no update in a trial.
class TrialUndo {
 public:
  TrialUndo(Model& model, const torch::Device& device) : model_(model), device_(device) {
    cpu_state_ = generator_state(at::detail::getDefaultCPUGenerator());
#ifdef DDPTRAIN_TORCH_CUDA
    if (device_.is_cuda()) {
      cuda_state_ = generator_state(at::cuda::detail::getDefaultCUDAGenerator(device_.index()));
    }
#endif
    for (const auto& buffer : model_.named_buffers()) buffers_.push_back(buffer.tensor.clone());
  }
  ~TrialUndo() {
    set_generator_state(at::detail::getDefaultCPUGenerator(), cpu_state_);
#ifdef DDPTRAIN_TORCH_CUDA
    if (cuda_state_.defined()) {
      set_generator_state(at::cuda::detail::getDefaultCUDAGenerator(device_.index()), cuda_state_);
    }
#endif
    torch::NoGradGuard no_grad;
    const std::vector<NamedTensor> buffers = model_.named_buffers();
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].tensor.copy_(buffers_[i]);
    // The trials' gradients were views of the trial trainer's buckets: let them go with it.
    for (const auto& param : model_.named_parameters()) param.tensor.mutable_grad().reset();
  }
  TrialUndo(const TrialUndo&) = delete;
  TrialUndo& operator=(const TrialUndo&) = delete;

 private:
  Model& model_;
  torch::Device device_;
  torch::Tensor cpu_state_;
  torch::Tensor cuda_state_;
  std::vector<torch::Tensor> buffers_;
};

// This rank's answer for one size.
bool trial_fits(Trainer& trainer, int64_t batch, const std::optional<int64_t>& simulated,
                const torch::Device& device) {
  try {
    if (simulated && batch > *simulated) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "simulated (a test's limit of ", *simulated,
                       " samples): a batch of ", batch, " does not fit");
    }
    trainer.trial_step(batch);
    return true;
  } catch (const c10::OutOfMemoryError&) {
    release_cached_device_memory(device);
    return false;
  }
}

}  // namespace

void release_cached_device_memory([[maybe_unused]] const torch::Device& device) {
#ifdef DDPTRAIN_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

std::string BatchSizeTrials::text() const {
  std::string tried;
  bool any_failed = false;
  for (const Trial& trial : trials) {
    tried += fmt::format("{}{}{}", tried.empty() ? "" : " ", trial.batch, trial.fitted ? "" : "x");
    any_failed = any_failed || !trial.fitted;
  }
  return fmt::format("{} (tried {}{}{})", largest, tried, any_failed ? "; x: did not fit" : "",
                     largest == limit ? fmt::format("; {} is the most auto tries", limit) : "");
}

BatchSizeTrials search_largest_batch(int64_t limit, const std::function<bool(int64_t)>& fits) {
  BatchSizeTrials result;
  result.limit = limit;
  const auto tried = [&](int64_t batch) {
    const bool fitted = fits(batch);
    result.trials.push_back({batch, fitted});
    return fitted;
  };
  int64_t fitted = 0;          // the largest size known to fit
  int64_t failed = limit + 1;  // the smallest size known not to fit
  for (int64_t batch = 1; fitted < limit; batch = std::min(2 * batch, limit)) {
    if (!tried(batch)) {
      failed = batch;
      break;
    }
    fitted = batch;
  }
  while (failed - fitted > 1) {
    const int64_t middle = fitted + (failed - fitted) / 2;
    if (tried(middle)) {
      fitted = middle;
    } else {
      failed = middle;
    }
  }
  result.largest = fitted;
  return result;
}

int64_t largest_batch_size(const TrainerOptions& trainer, const ShardingPlan& sharding,
                           Communicator& comm, HostGroup& group, Model& model, const Dataset& data,
                           std::optional<int64_t> trial_sample_limit) {
  const std::optional<int64_t> simulated = trial_sample_limit;
  const torch::Device device = comm.device();
  if (!device.is_cuda() && !simulated) {
    throw ConfigError(fmt::format(
        "option 'train.batch_size' = auto finds the largest batch that fits in GPU memory, and "
        "this run is on {}: set a number",
        device.str()));
  }
  // Every rank must find one global batch in the data.
  const int64_t limit = std::min<int64_t>(
      kMaxAutoBatch, data.size() / (static_cast<int64_t>(comm.size()) * trainer.grad_accum));
  if (limit < 1) {
    throw ConfigError(fmt::format(
        "option 'train.batch_size' = auto: the training data's {} samples are fewer than one per "
        "rank and micro-step",
        data.size()));
  }
  spdlog::info("train.batch_size = auto: trial steps of up to {} samples per rank on {}", limit,
               device.str());

  TrainerOptions trial = trainer;
  trial.batch = 1;
  BatchSizeTrials trials;
  {
    // The trial trainer is the run's own kind (same buckets, optimizer, moving average, loss
    // scaler), so a trial holds what a real step will. It is built first, since it moves the model
    // to the device; what trials change is put back before it goes.
    Trainer trial_trainer(trial, sharding.for_trial(), comm, model, data);
    const TrialUndo undo(model, device);
    trials = search_largest_batch(limit, [&](int64_t batch) {
      return group.all(fmt::format("trial step of batch size {}", batch),
                       trial_fits(trial_trainer, batch, simulated, device));
    });
  }
  release_cached_device_memory(device);
  if (trials.largest == 0) {
    throw OutOfMemoryError(
        "train.batch_size = auto: not even 1 sample per rank fits in GPU memory on every rank; a "
        "smaller model (or train.precision = bf16) is needed",
        Raised::kAllRanks);
  }
  spdlog::info("train.batch_size = auto: {} per rank", trials.text());
  return trials.largest;
}

}  // namespace ddpt
