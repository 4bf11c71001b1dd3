// Where this rank sits: world rank/size, rank within its node, number of nodes.
// Nodes are found by MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), never by hostname.
#pragma once

#include <mpi.h>

namespace ddpt {

struct Topology {
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;  // rank among the ranks sharing this node's memory
  int local_size = 1;  // ranks on this node
  int node_count = 1;
  int node_index = 0;      // 0 .. node_count-1, ordered by the lowest world rank on each node
  int min_local_size = 1;  // fewest ranks on any node
  int max_local_size = 1;  // most ranks on any node

  // Collective over `comm`.
  static Topology detect(MPI_Comm comm);
  bool uniform() const { return min_local_size == max_local_size; }
};

}  // namespace ddpt
