#include <fmt/format.h>

#include <iostream>
#include <vector>

#include "app/commands.hpp"
#include "app/run_banner.hpp"
#include "comm/make_communicator.hpp"
#include "comm/watched_world.hpp"
#include "config/parse_config.hpp"
#include "util/process_identity.hpp"

namespace ddpt {
namespace {

// Collective: one line per rank (where it runs, what it drives). This is how a user checks node
// count, local ranks and GPU choice across nodes.
std::string placement_table(const Job& job, HostGroup& group) {
  const Topology& t = job.topology;
  const std::vector<std::string> lines = group.all_gather(
      "placement lines", fmt::format("    {:>5}  {:>4}  {:<20}  {:>5}/{:<5}  {:<8}  {}",
                                     t.world_rank, t.node_index, process_host(), t.local_rank,
                                     t.local_size, job.device.device.str(), job.device.threads));
  std::string text = fmt::format("  placement       :\n    {:>5}  {:>4}  {:<20}  {:>11}  {:<8}  {}",
                                 "rank", "node", "host", "local/ranks", "device", "threads");
  for (const std::string& line : lines) text += "\n" + line;
  return text;
}

}  // namespace

int info_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const Config config = parse_config(args, /*deck_optional=*/true);
  const Job job = set_up_job(config.train.threads);
  const WatchedWorld world = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  const std::string backend = choice_name(resolved_backend(config.ddp.backend, job.device.device)) +
                              std::string(config.ddp.backend == Backend::kAuto ? " (auto)" : "");
  const std::string placement = placement_table(job, *world.group);
  if (mpi.world_rank() == 0)
    std::cout << describe_job(job, backend) << "\n" << placement << std::endl;
  return 0;
}

}  // namespace ddpt
