#include "setup/sharding.hpp"

#include "comm/make_communicator.hpp"

namespace ddpt {

ShardingPlan plan_sharding(const Config& config, int world_size, torch::Device device) {
  const DdpConfig& ddp = config.ddp;
  ShardingPlan plan;
  plan.requested = ddp.zero;
  plan.shards = world_size;
  // One rank has nothing to shard: the sharded path's reduce-scatter and all-gather would only
  // copy (the scaling MLP's step took longer: benchmarks.md, "Choices measured": no ZeRO at one
  // rank). So a one-rank run with ZeRO trains unsharded; its checkpoints look the same either way.
  plan.stage = world_size > 1 ? static_cast<ZeroStage>(ddp.zero) : ZeroStage::kNone;
  // The moving average swaps itself into the parameters for evaluation, on each rank: with one
  // shared copy the ranks would swap each other's values.
  plan.moving_average = config.train.ema_decay > 0;
  // On the 2-core VM with MPI, prefetch ran slower than none (benchmarks.md, "Choices measured":
  // ZeRO-3 prefetch): the communication thread's MPI_Allgather polls on the core the compute
  // needs. NCCL's own stream overlaps it.
  plan.prefetch =
      ddp.prefetch == Prefetch::kOn ||
      (ddp.prefetch == Prefetch::kAuto && resolved_backend(ddp.backend, device) == Backend::kNccl);
  if (ddp.compress != WirePrecision::kNone) {
    plan.wire_dtype = ddp.compress == WirePrecision::kBf16 ? torch::kBFloat16 : torch::kHalf;
  }
  return plan;
}

}  // namespace ddpt
