// Times a Communicator's collectives over a range of message sizes, with the figures nccl-tests
// prints (its PERFORMANCE.md defines them), so that a user can check a cluster's interconnect
// from a job before training on it:
//   algbw = bytes / time;
//   busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for reduce_scatter and all_gather: the
//           bandwidth each rank's link carries, comparable with the hardware's peak and across
//           rank counts.
// bytes is the buffer an all_reduce reduces, and the whole (n blocks) buffer a reduce_scatter
// reads or an all_gather fills, as in nccl-tests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace ddpt {

enum class CollectiveOp { kAllReduce, kReduceScatter, kAllGather };

const char* collective_name(CollectiveOp op);  // "all_reduce", "reduce_scatter", "all_gather"
std::optional<CollectiveOp> parse_collective(const std::string& name);
double bus_bandwidth_factor(CollectiveOp op, int ranks);

struct CollectiveBenchOptions {
  std::vector<CollectiveOp> ops{CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
                                CollectiveOp::kAllGather};
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{256} << 20;
  int64_t step_factor = 2;  // sizes min, min x f, min x f^2, ... up to max
  int iterations = 20;      // timed calls per size
  int warmup = 5;           // untimed calls per size before them
  // Buffers from comm.allocate_buffer(), as training allocates its gradient buckets: with MPI on
  // one node they lie in node-shared memory, and all_reduce and reduce_scatter sum there
  // (comm/node_all_reduce.hpp) instead of through MPI's messages. One sum on a buffer at a time,
  // as a bucket is summed once per step: each call is waited for before the next is issued.
  bool backend_buffers = false;
};

struct CollectiveTiming {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t bytes = 0;
  int64_t elements = 0;        // float32 values in the buffer
  double seconds = 0;          // per call: the slowest rank's mean over the timed calls
  double algbw = 0;            // bytes per second
  double busbw = 0;            // bytes per second
  bool shared_memory = false;  // the buffer lay in node-shared memory (in_shared_memory)
};

// The sizes measured for `op` on `ranks` ranks: min_bytes, x step_factor, ... up to max_bytes,
// each rounded down to whole float32 values (reduce_scatter and all_gather: to a multiple of
// `ranks` values); sizes that round to nothing are left out.
std::vector<int64_t> bench_sizes(const CollectiveBenchOptions& options, CollectiveOp op, int ranks);

// Collective: every rank of `comm` calls it with the same options. Per op and size: `warmup`
// calls, then `iterations` calls issued back to back and then waited for (a GPU's stream
// synchronised; with backend_buffers each call waited for in turn), on random float32 data on
// comm.device(); all_reduce averages, as the gradient all-reduce does. Then one call on known
// values, in a buffer made as the timed one was, is checked: a wrong result is an Error (exit 1)
// naming the op, the size and the rank. `report` gets each timing as it is measured (every rank).
std::vector<CollectiveTiming> time_collectives(
    Communicator& comm, const CollectiveBenchOptions& options,
    const std::function<void(const CollectiveTiming&)>& report = {});

}  // namespace ddpt
