#include <iostream>

#include "app/commands.hpp"
#include "app/job.hpp"
#include "config/parse_config.hpp"
#include "dist/make_communicator.hpp"

namespace ddpt {

int info_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const Config config = parse_config(args, /*deck_optional=*/true);
  const Job job = set_up_job(config);
  const bool would_use_nccl = job.device.device.is_cuda() && nccl_compiled();
  const std::string backend = config.ddp.backend == "auto"
                                  ? (would_use_nccl ? "nccl" : "mpi") + std::string(" (auto)")
                                  : config.ddp.backend;
  if (mpi.world_rank() == 0) std::cout << describe_job(job, backend) << std::endl;
  return 0;
}

}  // namespace ddpt
