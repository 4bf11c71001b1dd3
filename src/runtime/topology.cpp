#include "runtime/topology.hpp"

#include "runtime/mpi_comm_handle.hpp"
#include "util/check.hpp"

namespace ddpt {

Topology Topology::detect(MPI_Comm comm) {
  Topology t;
  DDPT_CHECK_MPI(MPI_Comm_rank(comm, &t.world_rank));
  DDPT_CHECK_MPI(MPI_Comm_size(comm, &t.world_size));

  MpiCommHandle node_comm;
  DDPT_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, t.world_rank, MPI_INFO_NULL,
                                     node_comm.out()));
  DDPT_CHECK_MPI(MPI_Comm_rank(node_comm.get(), &t.local_rank));
  DDPT_CHECK_MPI(MPI_Comm_size(node_comm.get(), &t.local_size));

  // Node leaders (local rank 0) are numbered in world-rank order by an exclusive scan,
  // then each leader tells the ranks of its node.
  const int is_leader = t.local_rank == 0 ? 1 : 0;
  DDPT_CHECK_MPI(MPI_Allreduce(&is_leader, &t.node_count, 1, MPI_INT, MPI_SUM, comm));
  int leaders_before = 0;
  DDPT_CHECK_MPI(MPI_Exscan(&is_leader, &leaders_before, 1, MPI_INT, MPI_SUM, comm));
  if (t.world_rank == 0) leaders_before = 0;  // MPI_Exscan leaves rank 0's result undefined
  t.node_index = leaders_before;
  DDPT_CHECK_MPI(MPI_Allreduce(&t.local_size, &t.min_local_size, 1, MPI_INT, MPI_MIN, comm));
  DDPT_CHECK_MPI(MPI_Allreduce(&t.local_size, &t.max_local_size, 1, MPI_INT, MPI_MAX, comm));
  DDPT_CHECK_MPI(MPI_Bcast(&t.node_index, 1, MPI_INT, 0, node_comm.get()));
  return t;
}

}  // namespace ddpt
