#include "app/run_banner.hpp"

#include <fmt/format.h>
#include <torch/version.h>

#include "comm/make_communicator.hpp"
#include "h5/h5_fletcher32.hpp"
#include "models/cpu_convolutions.hpp"
#include "models/cpu_gemm.hpp"
#include "optim/optimizer.hpp"
#include "runtime/gpu_inventory.hpp"
#include "runtime/mpi_env.hpp"
#include "util/byte_size.hpp"
#include "util/log.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

// "1.2 GFLOP": floating-point operations with an SI prefix.
std::string human_flops(double flops) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int k = 0;
  while (flops >= 1000 && k < 5) {
    flops /= 1000;
    ++k;
  }
  return fmt::format("{:.3g} {}FLOP", flops, prefixes[k]);
}

// What the banner reads: the setup, and what the trainer was built into.
struct BannerInputs {
  const TrainingSetup& setup;
  const TrainerFacts trainer;
};

// The model, its compute, precision and frozen parameters.
void log_model(const BannerInputs& in, int64_t global_batch) {
  spdlog::info("  model           : {} ({} parameters)", in.setup.model->describe(),
               parameter_count(*in.setup.model));
  if (const double flops = in.setup.model->forward_flops_per_sample(); flops > 0) {
    spdlog::info("  compute         : {} per sample forward, about {} per training step",
                 human_flops(flops), human_flops(3 * flops * static_cast<double>(global_batch)));
  }
  const Precision precision = in.trainer.precision;
  spdlog::info("  precision       : {}{}{}", choice_name(precision),
               precision == Precision::kFp32 ? "" : " autocast (weights, optimizer fp32)",
               in.trainer.loss_scale
                   ? fmt::format(", loss scale {} (dynamic)", *in.trainer.loss_scale)
                   : std::string());
  if (in.setup.freeze.frozen_tensors > 0) {
    spdlog::info("  trainable       : {} values; frozen: {} values in {} tensors ({})",
                 in.setup.freeze.trainable_values, in.setup.freeze.frozen_values,
                 in.setup.freeze.frozen_tensors, in.setup.config.model.freeze);
  }
}

// The data, the batch, the buckets and the optimizer.
void log_training(const BannerInputs& in, int64_t batch) {
  const Config& config = in.setup.config;
  const int ranks = in.setup.comm->size();
  spdlog::info("  data            : {}", in.setup.data.train->describe());
  if (in.setup.data.val) spdlog::info("  validation      : {}", in.setup.data.val->describe());
  spdlog::info("  batch           : {} per rank{} x {} micro-steps x {} ranks = {} per step", batch,
               config.train.batch_size_auto ? " (auto: the largest that fitted)" : "",
               config.train.grad_accum, ranks, batch * config.train.grad_accum * ranks);
  spdlog::info(
      "  buckets         : {} ({}), gradients on the wire in {}{}", in.trainer.buckets,
      in.trainer.sharding.parameters_sharded()
          ? std::string("ZeRO-3: one per block, one per other parameter; ") +
                (in.trainer.sharding.prefetch ? "the next block gathered while one computes"
                                              : "each block gathered as it starts") +
                (in.trainer.units_in_shared_memory ? ", into the node's shared memory" : "")
          : fmt::format("first {} MiB, then {} MiB", config.ddp.first_bucket_mb,
                        config.ddp.bucket_mb),
      config.ddp.compress == WirePrecision::kNone ? "fp32" : choice_name(config.ddp.compress),
      in.trainer.buckets_in_shared_memory ? ", summed in the node's shared memory" : "");
  spdlog::info(
      "  optimizer       : {}, weight decay {} (not on biases and norms), state {} per rank{}{}",
      choice_name(config.optim.type), config.optim.weight_decay,
      human_bytes(in.trainer.planned_optimizer_state_bytes),
      in.trainer.sharding.optimizer_sharded()
          ? fmt::format(" (ZeRO-{}: rank 0's shard of {}{})", in.trainer.sharding.stage_number(),
                        human_bytes(in.trainer.planned_whole_optimizer_state_bytes),
                        in.trainer.parameters_shared
                            ? "; one copy of the parameters in the node's shared memory"
                            : "")
      : in.trainer.sharding.stage_dropped()
          ? fmt::format(" (ddp.zero = {}: nothing to shard on one rank)",
                        in.trainer.sharding.requested)
          : std::string(),
      config.optim.clip > 0 ? fmt::format(", gradients clipped to norm {}", config.optim.clip)
                            : std::string());
  spdlog::info("  learning rate   : {}", in.trainer.schedule);
}

// ZeRO-3's part of the memory line: what a rank gathers beside its shards, for how long, and where.
std::string zero3_memory(const TrainerFacts& t) {
  return fmt::format(
      " (ZeRO-3: the rank's shards and the buckets being reduced; gathered{}: the root unit of {} "
      "through forward and backward, and each block's unit, up to {}, while it runs{}{})",
      t.units_in_shared_memory ? " into slots the node's ranks share" : "",
      human_bytes(t.root_unit_bytes), human_bytes(t.largest_unit_bytes),
      t.sharding.prefetch ? " (two at a time)" : "",
      t.precision == Precision::kFp32
          ? std::string()
          : fmt::format(", with its weights' {} casts", choice_name(t.precision)));
}

// What each rank will hold: the summary's memory line says what it held.
void log_memory(const BannerInputs& in) {
  const TrainerFacts& t = in.trainer;
  spdlog::info("  memory          : parameters {}, gradients {}, optimizer state {} per rank{}",
               human_bytes(t.held_parameter_bytes), human_bytes(t.planned_gradient_bytes),
               human_bytes(t.planned_optimizer_state_bytes),
               t.sharding.parameters_sharded() ? zero3_memory(t)
               : t.sharding.gradients_sharded()
                   ? " (ZeRO-2: the rank's shard of the gradients and the buckets being reduced)"
                   : "");
}

}  // namespace

std::string describe_job(const Job& job, const std::string& backend) {
  const Topology& t = job.topology;
  const std::string per_node = t.uniform()
                                   ? std::to_string(t.local_size)
                                   : fmt::format("{}..{}", t.min_local_size, t.max_local_size);
  const LaunchEnvironment& env = job.launch;
  std::string text;
  text += fmt::format("ddptrain {}\n", ddptrain_version());
  text += fmt::format("  launcher        : {}{}\n", env.launcher,
                      env.slurm_job_id.empty() ? "" : " (job " + env.slurm_job_id + ")");
  text += fmt::format("  MPI             : {} ({})\n", MpiEnv::library_version(),
                      thread_level_name(MpiEnv::kRequiredThreadLevel));
  text += fmt::format("  ranks           : {} on {} node(s), {} per node\n", t.world_size,
                      t.node_count, per_node);
  text += fmt::format("  device (rank 0) : {}\n", job.device.device.str());
  text += fmt::format("  GPUs            : {}\n", describe_gpus());
  text += fmt::format("  CPU threads     : {} per rank ({}; {} core(s) available to rank 0)\n",
                      job.device.threads, job.device.threads_why, cores_available());
  text += fmt::format("  backend         : {}\n", backend);
  text +=
      fmt::format("  NCCL            : {}\n",
                  nccl_compiled() ? "compiled in, version " + nccl_version() : "not compiled in");
  text += fmt::format("  LibTorch        : {}\n", TORCH_VERSION);
  // The built-in models' float32 CPU products (models/cpu_gemm.hpp); LibTorch's own on GPUs.
  text += fmt::format("  CPU GEMM        : {}\n", cpu_gemm_name());
  text += fmt::format("  CPU convolutions: {}\n", choose_cpu_convolutions().text);
  text += fmt::format("  HDF5            : {}", hdf5_checksum_text());
  return text;
}

void log_run_banner(const TrainingSetup& setup) {
  const BannerInputs in{setup, setup.run->trainer().facts()};
  spdlog::info("{}", describe_job(setup.job, setup.comm->backend_name()));
  const int64_t batch = setup.run->options().step.batch;
  log_model(in, batch * setup.config.train.grad_accum * setup.comm->size());
  log_training(in, batch);
  log_memory(in);
  if (!setup.resume_path.empty()) {
    spdlog::info("  resumed         : at step {} from {}", setup.resume_step, setup.resume_path);
  }
}

}  // namespace ddpt
