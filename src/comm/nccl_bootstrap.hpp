// NCCL's bootstrap over MPI: rank 0 makes the unique id, MPI_Bcast gives it to every rank.
// Needs no GPU (ncclGetUniqueId only opens a socket), so it is unit-tested on CPU machines.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <string>

namespace ddpt {

// Collective over `comm`: every rank returns rank 0's id.
ncclUniqueId broadcast_nccl_unique_id(MPI_Comm comm);

// "2.27.3" from the NCCL library linked at run time.
std::string nccl_version_string();

}  // namespace ddpt
