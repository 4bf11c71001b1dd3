#include "comm/nccl_bootstrap.hpp"

#include "runtime/cuda_check.hpp"
#include "util/check.hpp"

namespace ddpt {

ncclUniqueId broadcast_nccl_unique_id(MPI_Comm comm) {
  int rank = 0;
  DDPT_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  ncclUniqueId id{};
  if (rank == 0) DDPT_CHECK_NCCL(ncclGetUniqueId(&id));
  DDPT_CHECK_MPI(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm));
  return id;
}

std::string nccl_version_string() {
  int code = 0;
  DDPT_CHECK_NCCL(ncclGetVersion(&code));
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

}  // namespace ddpt
