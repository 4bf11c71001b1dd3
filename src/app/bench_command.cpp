// ddptrain bench comm [DECK] [--section.key=value ...] [--min-bytes N] [--max-bytes N] ...:
// the collectives of the backend a training run of this deck would use, timed over message
// sizes, with nccl-tests' algbw and busbw (comm/collective_bench.hpp). Run it with the same
// launcher, ranks and nodes as the training job to see what its interconnect gives; on one
// node, also the node-shared memory that training's gradient sums go through.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/commands.hpp"
#include "comm/collective_bench.hpp"
#include "comm/make_communicator.hpp"
#include "comm/watched_world.hpp"
#include "config/command_flags.hpp"
#include "config/config.hpp"
#include "config/parse_config.hpp"
#include "runtime/job.hpp"
#include "setup/test_faults.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

const char* kBenchUsage =
    "ddptrain bench comm [DECK] [--section.key=value ...] [--min-bytes 8] [--max-bytes 256MiB]\n"
    "                    [--step-factor 2] [--iters 20] [--warmup 5]\n"
    "                    [--ops all_reduce,reduce_scatter,all_gather]";

int64_t take_count(std::vector<std::string>& args, const std::string& name, int64_t fallback,
                   int64_t least) {
  constexpr int64_t kMost = 1000000;
  const std::string text = take_flag(args, name);
  if (text.empty()) return fallback;
  const bool digits = text.size() <= 7 && text.find_first_not_of("0123456789") == std::string::npos;
  const int64_t count = digits ? std::stoll(text) : -1;
  if (count < least || count > kMost) {
    throw ConfigError(
        fmt::format("--{} = '{}' must be a whole number from {} to {}", name, text, least, kMost));
  }
  return count;
}

std::vector<CollectiveOp> take_ops(std::vector<std::string>& args,
                                   std::vector<CollectiveOp> fallback) {
  const std::string text = take_flag(args, "ops");
  if (text.empty()) return fallback;
  std::vector<CollectiveOp> ops;
  std::stringstream list(text);
  for (std::string name; std::getline(list, name, ',');) {
    const std::optional<CollectiveOp> op = parse_collective(name);
    if (!op) {
      throw ConfigError(fmt::format(
          "--ops: unknown collective '{}' (all_reduce, reduce_scatter, all_gather)", name));
    }
    ops.push_back(*op);
  }
  return ops;
}

CollectiveBenchOptions take_bench_options(std::vector<std::string>& args) {
  CollectiveBenchOptions o;
  o.min_bytes = take_size_flag(args, "min-bytes", o.min_bytes);
  o.max_bytes = take_size_flag(args, "max-bytes", o.max_bytes);
  if (o.min_bytes > o.max_bytes) {
    throw ConfigError(fmt::format("--min-bytes ({}) is larger than --max-bytes ({})",
                                  human_bytes(o.min_bytes), human_bytes(o.max_bytes)));
  }
  o.step_factor = take_count(args, "step-factor", o.step_factor, 2);
  o.iterations = static_cast<int>(take_count(args, "iters", o.iterations, 1));
  o.warmup = static_cast<int>(take_count(args, "warmup", o.warmup, 0));
  o.ops = take_ops(args, o.ops);
  return o;
}

// Training on one node (MPI, ddp.shared_memory, fp32 on the wire) sums its gradient buckets in
// memory the ranks share, not through the backend's messages: the same ops timed on such buffers,
// where this job's training would use them. Collective (the probe allocates a buffer).
std::optional<CollectiveBenchOptions> shared_memory_leg(const DdpConfig& ddp, Communicator& comm,
                                                        const CollectiveBenchOptions& options) {
  if (!ddp.shared_memory || ddp.compress != WirePrecision::kNone) return std::nullopt;
  const auto values = torch::TensorOptions().dtype(torch::kFloat).device(comm.device());
  if (!in_shared_memory(comm, comm.allocate_buffer(1, values))) return std::nullopt;
  CollectiveBenchOptions shared = options;
  shared.backend_buffers = true;
  // all_gather has no shared-memory path: ZeRO-1 on one node shares the parameters instead.
  shared.ops.erase(std::remove(shared.ops.begin(), shared.ops.end(), CollectiveOp::kAllGather),
                   shared.ops.end());
  if (shared.ops.empty()) return std::nullopt;
  return shared;
}

// The tables' column names, aligned with row().
std::string column_header() {
  return fmt::format("  {:<15} {:>10} {:>12} {:>12} {:>13} {:>13}", "op", "size", "elements",
                     "time (us)", "algbw (GB/s)", "busbw (GB/s)");
}

std::string row(const CollectiveTiming& t) {
  constexpr double kGB = 1e9;  // nccl-tests' GB/s
  return fmt::format("  {:<15} {:>10} {:>12} {:>12.1f} {:>13.3f} {:>13.3f}", collective_name(t.op),
                     human_bytes(t.bytes), t.elements, t.seconds * 1e6, t.algbw / kGB,
                     t.busbw / kGB);
}

int bench_comm(std::vector<std::string> args, MpiEnv& mpi) {
  const CollectiveBenchOptions options = take_bench_options(args);
  const Config config = parse_config(args, /*deck_optional=*/true);
  const Job job = set_up_job(config.train.threads);
  check_one_rank_per_gpu(job, *faults_from_environment(job.topology.world_rank));
  const WatchedWorld world = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  const std::unique_ptr<Communicator> comm = make_communicator(
      config.ddp.backend, job.device.device, MPI_COMM_WORLD, world.watchdog.get());
  const bool rank0 = mpi.world_rank() == 0;
  if (rank0) {
    std::cout << fmt::format(
                     "ddptrain bench comm: backend {}, {} ranks on {} node(s), device {}, float32\n"
                     "  {} timed calls per size after {} warm-up calls, issued back to back; time "
                     "is the slowest rank's mean per call\n"
                     "  algbw = size / time; busbw = algbw x 2(n-1)/n (all_reduce) or x (n-1)/n "
                     "(reduce_scatter, all_gather), as in nccl-tests; GB/s = 1e9 bytes/s\n\n{}",
                     comm->backend_name(), comm->size(), job.topology.node_count,
                     job.device.device.str(), options.iterations, options.warmup, column_header())
              << std::endl;
  }
  const auto print = [&](const CollectiveTiming& t) {
    if (rank0) std::cout << row(t) << std::endl;
  };
  time_collectives(*comm, options, print);
  if (const std::optional<CollectiveBenchOptions> shared =
          shared_memory_leg(config.ddp, *comm, options)) {
    if (rank0) {
      std::cout << fmt::format(
                       "\n  through node-shared memory (ddp.shared_memory): how training sums its "
                       "gradient buckets with\n  every rank on one node; each call waited for "
                       "before the next, as a bucket is summed once per step\n\n{}",
                       column_header())
                << std::endl;
    }
    // A size /dev/shm refused (it is full, or too small) was timed through MPI, as training's
    // buckets then are; from then on every size is (node_all_reduce.cpp). Every rank agrees.
    bool refused = false;
    time_collectives(*comm, *shared, [&](const CollectiveTiming& t) {
      refused = refused || !t.shared_memory;
      if (rank0) std::cout << row(t) << (t.shared_memory ? "" : "  *") << std::endl;
    });
    if (rank0 && refused) {
      std::cout << "  * through MPI, not node-shared memory: /dev/shm refused the buffer "
                   "(ddptrain's warning says why)"
                << std::endl;
    }
  }
  if (rank0) std::cout << "\nall results checked on every rank" << std::endl;
  return 0;
}

}  // namespace

std::string bench_help() {
  return std::string("usage: ") + kBenchUsage +
         "\n\n"
         "Times the collectives a training run of DECK would use (ddp.backend, device.*) over\n"
         "message sizes from --min-bytes to --max-bytes (x --step-factor each time), on random\n"
         "float32 data, and checks one result per size. Launch it like the training job (mpirun\n"
         "-np N, srun) to measure that job's interconnect. Sizes take K, KiB, M, MiB, G, GiB.\n"
         "With every rank on one node (MPI backend, ddp.shared_memory = true, fp32 on the\n"
         "wire), training sums its gradients in node-shared memory: all_reduce and\n"
         "reduce_scatter are then timed a second time, on such buffers; a row marked * went\n"
         "through MPI instead, because /dev/shm refused its buffer.\n";
}

int bench_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  if (args.empty() || args[0] != "comm")
    throw ConfigError(
        "bench: what to time? usage: ddptrain bench comm [DECK] [options] (see "
        "ddptrain bench --help)");
  return bench_comm(std::vector<std::string>(args.begin() + 1, args.end()), mpi);
}

}  // namespace ddpt
