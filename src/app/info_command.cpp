#include <fmt/format.h>

#include <iostream>
#include <vector>

#include "app/commands.hpp"
#include "app/job.hpp"
#include "config/parse_config.hpp"
#include "dist/make_communicator.hpp"
#include "util/check.hpp"
#include "util/process_identity.hpp"

namespace ddpt {
namespace {

// Collective: one line per rank (where it runs, what it drives), gathered on rank 0; empty
// elsewhere. This is how a user checks node count, local ranks and GPU choice across nodes.
std::string placement_table(const Job& job) {
  constexpr size_t kLine = 160;
  const Topology& t = job.topology;
  std::string mine = fmt::format("    {:>5}  {:>4}  {:<20}  {:>5}/{:<5}  {:<8}  {}", t.world_rank,
                                 t.node_index, process_host(), t.local_rank, t.local_size,
                                 job.device.device.str(), job.device.threads);
  mine.resize(kLine, '\0');
  std::vector<char> all(t.world_rank == 0 ? kLine * static_cast<size_t>(t.world_size) : 0);
  DDPT_CHECK_MPI(MPI_Gather(mine.data(), static_cast<int>(kLine), MPI_CHAR, all.data(),
                            static_cast<int>(kLine), MPI_CHAR, 0, MPI_COMM_WORLD));
  if (t.world_rank != 0) return "";
  std::string text = fmt::format("  placement       :\n    {:>5}  {:>4}  {:<20}  {:>11}  {:<8}  {}",
                                 "rank", "node", "host", "local/ranks", "device", "threads");
  for (int r = 0; r < t.world_size; ++r) text += "\n" + std::string(all.data() + kLine * r);
  return text;
}

}  // namespace

int info_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const Config config = parse_config(args, /*deck_optional=*/true);
  const Job job = set_up_job(config);
  const bool would_use_nccl = job.device.device.is_cuda() && nccl_compiled();
  const std::string backend = config.ddp.backend == "auto"
                                  ? (would_use_nccl ? "nccl" : "mpi") + std::string(" (auto)")
                                  : config.ddp.backend;
  const std::string placement = placement_table(job);
  if (mpi.world_rank() == 0)
    std::cout << describe_job(job, backend) << "\n" << placement << std::endl;
  return 0;
}

}  // namespace ddpt
