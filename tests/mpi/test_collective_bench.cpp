// ddptrain bench comm's measurement (comm/collective_bench.hpp): every op and size is timed with
// nccl-tests' figures, and a backend that returns wrong values is caught, not timed.
#include <gtest/gtest.h>

#include <utility>

#include "comm/collective_bench.hpp"
#include "comm/mpi_comm.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

TEST(CollectiveBench, SizesAreWholeValuesAndWholeBlocks) {
  CollectiveBenchOptions options;
  options.min_bytes = 8;
  options.max_bytes = 100;
  options.step_factor = 2;
  EXPECT_EQ(bench_sizes(options, CollectiveOp::kAllReduce, 3),
            (std::vector<int64_t>{8, 16, 32, 64}));
  // 3 ranks: multiples of 3 values (12 bytes); 8 B is not one value per rank, so it is left out.
  EXPECT_EQ(bench_sizes(options, CollectiveOp::kAllGather, 3), (std::vector<int64_t>{12, 24, 60}));
  options.max_bytes = int64_t{256} << 20;
  EXPECT_EQ(bench_sizes(options, CollectiveOp::kAllReduce, 1).size(), 26u);  // 8 B .. 256 MiB
  EXPECT_EQ(bench_sizes(options, CollectiveOp::kAllReduce, 1).back(), int64_t{256} << 20);
}

TEST(CollectiveBench, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllReduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::kAllGather, 2), 0.5);
}

TEST(CollectiveBench, EveryOpAndSizeIsTimedOnEveryRankAlike) {
  MpiComm comm(MPI_COMM_WORLD);
  CollectiveBenchOptions options;
  options.min_bytes = 8;
  options.max_bytes = 64 << 10;
  options.step_factor = 4;
  options.iterations = 3;
  options.warmup = 1;
  int reported = 0;
  const std::vector<CollectiveTiming> timings =
      time_collectives(comm, options, [&](const CollectiveTiming&) { ++reported; });
  size_t expected_rows = 0;
  for (const CollectiveOp op : options.ops)
    expected_rows += bench_sizes(options, op, comm.size()).size();
  ASSERT_EQ(timings.size(), expected_rows);
  EXPECT_EQ(reported, static_cast<int>(expected_rows));
  for (const CollectiveTiming& t : timings) {
    EXPECT_EQ(t.elements * 4, t.bytes);
    EXPECT_GT(t.seconds, 0);
    EXPECT_DOUBLE_EQ(t.algbw, static_cast<double>(t.bytes) / t.seconds);
    EXPECT_DOUBLE_EQ(t.busbw, t.algbw * bus_bandwidth_factor(t.op, comm.size()));
  }
  // The slowest rank's time: the same figures on every rank.
  const torch::Tensor mine =
      torch::tensor({timings.front().seconds, timings.back().seconds}, torch::kDouble);
  const torch::Tensor all = comm.all_gather(mine);
  for (int r = 1; r < comm.size(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0])) << "rank " << r;
}

// Buffers made as training makes its gradient buckets: with MPI on one node they lie in
// node-shared memory, so the sums timed (and checked) are those that training's steps do.
TEST(CollectiveBench, BackendBuffersAreSummedWhereTrainingSumsItsBuckets) {
  MpiComm comm(MPI_COMM_WORLD);
  CollectiveBenchOptions options;
  options.ops = {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter};
  options.min_bytes = 64;
  options.max_bytes = 1 << 20;
  options.step_factor = 16;
  options.iterations = 3;
  options.warmup = 1;
  options.backend_buffers = true;
  const std::vector<CollectiveTiming> timings = time_collectives(comm, options);
  ASSERT_EQ(timings.size(),
            bench_sizes(options, CollectiveOp::kAllReduce, comm.size()).size() +
                bench_sizes(options, CollectiveOp::kReduceScatter, comm.size()).size());
  // One rank has nothing to share; the MPI tests run every rank on one node.
  for (const CollectiveTiming& t : timings) {
    EXPECT_EQ(t.shared_memory, comm.size() > 1) << collective_name(t.op) << " " << t.bytes;
    EXPECT_GT(t.seconds, 0);
  }
  // Plain buffers are not.
  options.backend_buffers = false;
  for (const CollectiveTiming& t : time_collectives(comm, options)) EXPECT_FALSE(t.shared_memory);
}

// An all_reduce that leaves the last rank's result one off (a broken link, a bad reduction); with
// `only_shared`, only in buffers that lie in node-shared memory.
class OffByOneAllReduce final : public Communicator {
 public:
  OffByOneAllReduce(Communicator& inner, bool only_shared)
      : inner_(inner), only_shared_(only_shared) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend_name() const override { return inner_.backend_name(); }
  torch::Device device() const override { return inner_.device(); }
  std::shared_ptr<Work> all_reduce_async(torch::Tensor tensor, ReduceOp op) override {
    inner_.all_reduce_async(tensor, op)->wait();
    if (rank() == size() - 1 && (!only_shared_ || in_shared_memory(inner_, tensor))) tensor.add_(1);
    return inner_.all_reduce_async(torch::zeros({1}), ReduceOp::kSum);  // a finished Work
  }
  std::shared_ptr<Work> reduce_scatter_async(torch::Tensor input, torch::Tensor output) override {
    return inner_.reduce_scatter_async(std::move(input), std::move(output));
  }
  std::shared_ptr<Work> all_gather_in_place_async(torch::Tensor tensor) override {
    return inner_.all_gather_in_place_async(std::move(tensor));
  }
  void broadcast(torch::Tensor tensor, int root) override { inner_.broadcast(tensor, root); }
  torch::Tensor all_gather(const torch::Tensor& tensor) override {
    return inner_.all_gather(tensor);
  }
  void barrier() override { inner_.barrier(); }
  torch::Tensor allocate_buffer(int64_t numel, const torch::TensorOptions& options) override {
    return inner_.allocate_buffer(numel, options);
  }
  NodeSharedMemory* node_shared_memory() override { return inner_.node_shared_memory(); }
  const NodeSharedMemory* node_shared_memory() const override {
    return std::as_const(inner_).node_shared_memory();
  }

 private:
  Communicator& inner_;
  bool only_shared_;
};

// The last rank's wrong all_reduce result is an Error there, naming the op and the rank. With
// backend_buffers only a sum in node-shared memory goes wrong (none at one rank): caught only if
// the checked call takes the path that was timed.
void expect_wrong_result_caught(bool backend_buffers) {
  MpiComm comm(MPI_COMM_WORLD);
  OffByOneAllReduce broken(comm, /*only_shared=*/backend_buffers);
  CollectiveBenchOptions options;
  options.ops = {CollectiveOp::kAllReduce};
  options.min_bytes = options.max_bytes = 64;
  options.iterations = 1;
  options.warmup = 0;
  options.backend_buffers = backend_buffers;
  const bool wrong = comm.rank() == comm.size() - 1 && (!backend_buffers || comm.size() > 1);
  try {
    time_collectives(broken, options);
    EXPECT_FALSE(wrong) << "the last rank's wrong result was not caught";
  } catch (const Error& e) {
    EXPECT_TRUE(wrong) << e.what();
    EXPECT_NE(std::string(e.what()).find("all_reduce of 16 values gave wrong results on rank " +
                                         std::to_string(comm.rank())),
              std::string::npos)
        << e.what();
  }
}

TEST(CollectiveBench, AWrongResultIsAnErrorNamingTheOpAndRank) {
  expect_wrong_result_caught(/*backend_buffers=*/false);
}

// The check runs on the path that was timed: node-shared memory with MPI on one node.
TEST(CollectiveBench, AWrongResultInTheBackendsBuffersIsAnError) {
  expect_wrong_result_caught(/*backend_buffers=*/true);
}

}  // namespace
}  // namespace ddpt
