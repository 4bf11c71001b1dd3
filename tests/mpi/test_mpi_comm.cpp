// MpiComm collectives on random tensors against values computed independently on every rank.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "comm/mpi_comm.hpp"
#include "runtime/topology.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

// Rank r's contribution: a random tensor from seed 100 + r (any rank can recompute any other's).
torch::Tensor contribution(int rank, int64_t n) {
  torch::manual_seed(100 + rank);
  return torch::randn({n});
}

TEST(MpiComm, AllReduceSumAndAverage) {
  MpiComm comm(MPI_COMM_WORLD);
  const int64_t n = 1000;
  torch::Tensor expected = torch::zeros({n});
  for (int r = 0; r < comm.size(); ++r) expected += contribution(r, n);

  torch::Tensor sum = contribution(comm.rank(), n);
  comm.all_reduce(sum, ReduceOp::kSum);
  EXPECT_TRUE(torch::allclose(sum, expected, 1e-5, 1e-5));

  torch::Tensor avg = contribution(comm.rank(), n);
  comm.all_reduce(avg, ReduceOp::kAvg);
  EXPECT_TRUE(torch::allclose(avg, expected / comm.size(), 1e-5, 1e-5));
}

TEST(MpiComm, LargeAllReduceCrossesChunksAndIsIdenticalOnEveryRank) {
  // More than two 4 MiB chunks and an odd length, so slices and chunks are uneven.
  MpiComm comm(MPI_COMM_WORLD);
  const int64_t n = 2'500'001;
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    torch::Tensor expected = torch::zeros({n}, dtype);
    for (int r = 0; r < comm.size(); ++r) expected += contribution(r, n).to(dtype);
    torch::Tensor sum = contribution(comm.rank(), n).to(dtype);
    comm.all_reduce(sum, ReduceOp::kSum);
    EXPECT_TRUE(torch::allclose(sum, expected, 1e-5, 1e-5)) << c10::toString(dtype);
    // Every rank must hold bitwise the same result (replicas must not drift apart).
    const torch::Tensor all = comm.all_gather(sum);
    for (int r = 1; r < comm.size(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0])) << "rank " << r;
  }
}

// The second size is past the 8 MiB that MpiComm reduces at a time (a large parameter's gradient
// under ZeRO-2): several rounds, the last one shorter.
TEST(MpiComm, ReduceScatterGivesEachRankItsBlockOfTheSum) {
  MpiComm comm(MPI_COMM_WORLD);
  for (const int64_t block : {int64_t{1001}, (int64_t{8} << 20) / 4 + 1001})
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      torch::Tensor expected = torch::zeros({block * comm.size()}, torch::kDouble);
      for (int r = 0; r < comm.size(); ++r) {
        expected += contribution(r, block * comm.size()).to(dtype).to(torch::kDouble);
      }
      const torch::Tensor input = contribution(comm.rank(), block * comm.size()).to(dtype);
      torch::Tensor output = torch::full({block}, -7.0, dtype);
      comm.reduce_scatter_async(input, output)->wait();
      const double tolerance = dtype == torch::kFloat ? 1e-5 : 5e-2;
      EXPECT_TRUE(torch::allclose(output.to(torch::kDouble),
                                  expected.narrow(0, block * comm.rank(), block), tolerance,
                                  tolerance))
          << c10::toString(dtype) << ", " << block << " per rank";
    }
}

TEST(MpiComm, AllGatherInPlaceFillsEveryRanksBlock) {
  MpiComm comm(MPI_COMM_WORLD);
  const int64_t block = 777;
  torch::Tensor expected = torch::empty({block * comm.size()});
  for (int r = 0; r < comm.size(); ++r) {
    expected.narrow(0, block * r, block).copy_(contribution(r, block));
  }
  torch::Tensor gathered = torch::full({block * comm.size()}, -7.0);
  gathered.narrow(0, block * comm.rank(), block).copy_(contribution(comm.rank(), block));
  comm.all_gather_in_place_async(gathered)->wait();
  EXPECT_TRUE(torch::equal(gathered, expected));
}

TEST(MpiComm, ManyAsyncAllReducesCompleteInOrder) {
  MpiComm comm(MPI_COMM_WORLD);
  std::vector<torch::Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(torch::full({64}, double(comm.rank() + i)));
    works.push_back(comm.all_reduce_async(tensors.back(), ReduceOp::kSum));
  }
  const int n = comm.size();
  for (int i = 0; i < 8; ++i) {
    works[i]->wait();
    EXPECT_DOUBLE_EQ(tensors[i][0].item<double>(), n * (n - 1) / 2.0 + n * i);
  }
}

// Buffers from allocate_buffer are summed through node-shared memory (comm/node_all_reduce.hpp)
// when the ranks share a node, as they do under mpirun here: against the sum computed here and
// MPI_Allreduce's, repeatedly on the same buffers (each sum reuses the segment's flags), for
// lengths that do not divide by the world size and for one value.
TEST(MpiComm, SharedMemoryBuffersSumLikeMpiAllReduce) {
  MpiComm comm(MPI_COMM_WORLD);
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    for (const int64_t n : {int64_t{1}, int64_t{1001}, int64_t{2'500'001}}) {
      torch::Tensor buffer = comm.allocate_buffer(n, torch::TensorOptions(dtype));
      ASSERT_TRUE(torch::equal(buffer, torch::zeros({n}, dtype)));
      EXPECT_EQ(comm.in_shared_memory(buffer), comm.size() > 1);
      for (int round = 0; round < 3; ++round) {
        const auto rank_values = [&](int r) { return contribution(r + 10 * round, n).to(dtype); };
        torch::Tensor expected = torch::zeros({n}, dtype);
        for (int r = 0; r < comm.size(); ++r) expected += rank_values(r);
        torch::Tensor by_mpi = rank_values(comm.rank());
        comm.all_reduce(by_mpi, ReduceOp::kSum);
        ASSERT_FALSE(comm.in_shared_memory(by_mpi));

        buffer.copy_(rank_values(comm.rank()));
        comm.all_reduce(buffer, ReduceOp::kSum);
        EXPECT_TRUE(torch::allclose(buffer, expected, 1e-5, 1e-5))
            << c10::toString(dtype) << " n=" << n << " round " << round;
        // Two ranks: a + b is b + a, so the bits equal MPI's.
        if (comm.size() <= 2) EXPECT_TRUE(torch::equal(buffer, by_mpi)) << "n=" << n;
        const torch::Tensor all = comm.all_gather(buffer);
        for (int r = 1; r < comm.size(); ++r) EXPECT_TRUE(torch::equal(all[r], all[0])) << r;
      }
      buffer.copy_(contribution(comm.rank(), n).to(dtype));
      comm.all_reduce(buffer, ReduceOp::kAvg);
      torch::Tensor mean = contribution(comm.rank(), n).to(dtype);
      comm.all_reduce(mean, ReduceOp::kAvg);
      EXPECT_TRUE(torch::allclose(buffer, mean, 1e-6, 1e-6)) << "average, n=" << n;
    }
  }
  // Another dtype, or a part of a buffer, goes through MPI_Allreduce, with the same result.
  torch::Tensor longs = comm.allocate_buffer(5, torch::TensorOptions(torch::kLong));
  EXPECT_FALSE(comm.in_shared_memory(longs));
  longs.fill_(comm.rank() + 1);
  comm.all_reduce(longs, ReduceOp::kSum);
  EXPECT_EQ(longs[4].item<int64_t>(), comm.size() * (comm.size() + 1) / 2);
  torch::Tensor buffer = comm.allocate_buffer(10, torch::TensorOptions(torch::kFloat));
  buffer.fill_(1);
  torch::Tensor part = buffer.narrow(0, 2, 5);
  EXPECT_FALSE(comm.in_shared_memory(part));
  comm.all_reduce(part, ReduceOp::kSum);
  EXPECT_EQ(buffer.sum().item<float>(), 5.0f + 5.0f * comm.size());
}

// ZeRO-1's reduce-scatter of buffers in node-shared memory: each rank gets its block of the sum
// (against the sum computed here and MPI_Reduce_scatter_block's), in a separate output or in
// place in its own block of the buffer, whose other blocks are only read, and the sum of squares
// of the whole sum comes with it, the same bits on every rank. Block lengths of one value, an odd
// count and more than one NodeAllReduce::kChunkElements chunk; three rounds on the same buffer.
TEST(MpiComm, SharedMemoryReduceScatterGivesTheBlockAndTheSquares) {
  MpiComm comm(MPI_COMM_WORLD);
  const int size = comm.size();
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    for (const int64_t block : {int64_t{1}, int64_t{1001}, int64_t{600'001}}) {
      const int64_t n = block * size;
      torch::Tensor buffer = comm.allocate_buffer(n, torch::TensorOptions(dtype));
      ASSERT_EQ(comm.in_shared_memory(buffer), size > 1);
      for (int round = 0; round < 3; ++round) {
        const auto rank_values = [&](int r) { return contribution(r + 10 * round, n).to(dtype); };
        torch::Tensor expected = torch::zeros({n}, dtype);
        for (int r = 0; r < size; ++r) expected += rank_values(r);
        torch::Tensor by_mpi = torch::empty({block}, dtype);
        comm.reduce_scatter_async(rank_values(comm.rank()), by_mpi)->wait();

        buffer.copy_(rank_values(comm.rank()));
        torch::Tensor output = torch::empty({block}, dtype);
        double squares = std::nan("");
        if (size > 1) {
          comm.reduce_scatter_with_squares_async(buffer, output, &squares)->wait();
        } else {
          comm.reduce_scatter_async(buffer, output)->wait();
          squares = expected.to(torch::kDouble).square().sum().item<double>();
        }
        const std::string what = c10::toString(dtype) + std::string(" block=") +
                                 std::to_string(block) + " round " + std::to_string(round);
        EXPECT_TRUE(
            torch::allclose(output, expected.narrow(0, block * comm.rank(), block), 1e-5, 1e-5))
            << what;
        if (size <= 2) EXPECT_TRUE(torch::equal(output, by_mpi)) << what;  // a + b is b + a
        const torch::Tensor mine = rank_values(comm.rank());
        for (int r = 0; r < size; ++r) {
          const torch::Tensor in_buffer = buffer.narrow(0, block * r, block);
          EXPECT_TRUE(
              torch::equal(in_buffer, r == comm.rank() ? output : mine.narrow(0, block * r, block)))
              << what << ", block " << r << ": " << (r == comm.rank() ? "not the sum" : "written");
        }
        const double exact = expected.to(torch::kDouble).square().sum().item<double>();
        EXPECT_NEAR(squares, exact, 1e-12 * exact) << what;
        const torch::Tensor all = comm.all_gather(torch::tensor({squares}, torch::kDouble));
        for (int r = 1; r < size; ++r) {
          EXPECT_EQ(all[r].item<double>(), all[0].item<double>()) << what << ", rank " << r;
        }
        // In place: the output is this rank's block of the buffer (as the reducer asks).
        buffer.copy_(mine);
        torch::Tensor own = buffer.narrow(0, block * comm.rank(), block);
        double again = std::nan("");
        if (size > 1) {
          comm.reduce_scatter_with_squares_async(buffer, own, &again)->wait();
          EXPECT_EQ(again, squares) << what << ", in place";
        } else {
          comm.reduce_scatter_async(buffer, own)->wait();
        }
        EXPECT_TRUE(torch::equal(own, output)) << what << ", in place";
      }
    }
  }
  // Squares come only with buffers the backend sums itself.
  torch::Tensor plain = torch::zeros({4 * size});
  torch::Tensor block = torch::empty({4});
  double squares = 0;
  EXPECT_THROW(comm.reduce_scatter_with_squares_async(plain, block, &squares), Error);
}

// A node-shared sum has no rank assigned to a chunk: once every rank has arrived, whichever
// thread is free sums what nobody has taken. Here only rank 0 sums (its helper thread among
// them); the other ranks arrive, then wait for rank 0's word before they so much as look. With a
// block per rank, rank 0 would wait for them forever.
TEST(MpiComm, OneRankAloneSumsEveryChunkOnceAllHaveArrived) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) GTEST_SKIP() << "one rank: nothing is summed in shared memory";
  NodeSegments segments(MPI_COMM_WORLD);
  NodeAllReduce node(segments);
  const int64_t n = 5 * NodeAllReduce::kChunkElements * size + 3;  // several chunks per block
  for (const auto kind : {NodeSumKind::kAllReduce, NodeSumKind::kReduceScatter}) {
    const int64_t length = kind == NodeSumKind::kReduceScatter ? n - n % size : n;
    torch::Tensor buffer = node.allocate(length, torch::kFloat);
    ASSERT_TRUE(buffer.defined());
    torch::Tensor expected = torch::zeros({length});
    for (int r = 0; r < size; ++r) expected += contribution(r, length);
    for (int round = 0; round < 2; ++round) {
      buffer.copy_(contribution(rank, length));
      const NodeSum sum = node.arrive(buffer, kind);
      int word = 0;
      if (rank == 0) {
        node.finish(sum);  // every chunk, alone
        for (int r = 1; r < size; ++r) MPI_Send(&word, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
      } else {
        MPI_Recv(&word, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        node.finish(sum);  // nothing left to take
      }
      const torch::Tensor summed =
          kind == NodeSumKind::kReduceScatter ? node.own_block(buffer) : buffer;
      const torch::Tensor wanted =
          kind == NodeSumKind::kReduceScatter ? node.own_block(expected) : expected;
      EXPECT_TRUE(torch::allclose(summed, wanted, 1e-5, 1e-5)) << "round " << round;
      if (kind == NodeSumKind::kReduceScatter) {
        const double exact = expected.to(torch::kDouble).square().sum().item<double>();
        EXPECT_NEAR(node.squares(sum), exact, 1e-12 * exact) << "round " << round;
      }
      MPI_Barrier(MPI_COMM_WORLD);  // every rank has read before the next round writes
    }
  }
}

// Memory from allocate_common is one copy that every rank of the node maps: what one rank writes,
// every rank reads. At one rank there is nothing to share.
TEST(MpiComm, CommonMemoryIsTheSameOnEveryRank) {
  MpiComm comm(MPI_COMM_WORLD);
  const int64_t n = 100'000;
  torch::Tensor common =
      comm.allocate_common(n, torch::TensorOptions(torch::kFloat), "test values");
  ASSERT_EQ(common.defined(), comm.size() > 1);
  if (!common.defined()) return;
  EXPECT_TRUE(torch::equal(common, torch::zeros({n})));
  comm.barrier();                                             // every rank has seen the zeros
  common[comm.rank()] = static_cast<float>(comm.rank() + 1);  // one element each
  comm.barrier();
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(common[r].item<float>(), r + 1.0f) << r;
  comm.barrier();  // every rank has read before rank 0 writes again
  if (comm.rank() == 0) common.fill_(7);
  comm.barrier();
  EXPECT_TRUE(torch::equal(common, torch::full({n}, 7.0f)));
  EXPECT_FALSE(comm.in_shared_memory(common)) << "not a buffer that is summed";
}

// ZeRO-3's gather into node-shared memory (comm/node_all_gather.hpp): each rank's block lands in
// the node's one copy, and a rank still reading a gather holds back the others' next one, so no
// rank reads a mix of two gathers. Here the last rank reads each gather 100 ms late, while the
// others go straight on to the next gather with other values; every other gather fills only the
// start of the buffer (a smaller unit in a slot), in blocks of its own length. At one rank there
// is no buffer.
TEST(MpiComm, NodeSharedGatherWaitsForEveryReaderBeforeTheNext) {
  MpiComm comm(MPI_COMM_WORLD);
  const int64_t block = 100'003;
  const torch::TensorOptions floats(torch::kFloat);
  torch::Tensor buffer = comm.allocate_gather_buffer(block * comm.size(), floats, "test units");
  ASSERT_EQ(buffer.defined(), comm.size() > 1);
  if (!buffer.defined()) return;
  const bool late = comm.rank() == comm.size() - 1;
  for (int gather = 0; gather < 4; ++gather) {
    const int64_t length = gather % 2 == 0 ? block : block / 3;
    const torch::Tensor filled = buffer.narrow(0, 0, length * comm.size());
    const torch::Tensor mine = torch::full({length}, static_cast<float>(10 * gather + comm.rank()));
    comm.all_gather_into_shared_async(mine, filled)->wait();
    if (late) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int r = 0; r < comm.size(); ++r) {
      const torch::Tensor theirs = filled.narrow(0, length * r, length);
      EXPECT_TRUE(torch::equal(theirs, torch::full({length}, static_cast<float>(10 * gather + r))))
          << "gather " << gather << ", rank " << r << "'s block: " << theirs.max().item<float>();
    }
    comm.done_reading(filled);
  }
  EXPECT_FALSE(comm.in_shared_memory(buffer)) << "not a buffer that is summed";
}

// A bucket's memory stays mapped after its communicator is gone: parameters' gradients are
// views of buckets and outlive the training's communicator.
TEST(MpiComm, SharedMemoryBufferOutlivesItsCommunicator) {
  torch::Tensor buffer;
  {
    MpiComm comm(MPI_COMM_WORLD);
    buffer = comm.allocate_buffer(1 << 20, torch::TensorOptions(torch::kFloat));
    buffer.fill_(1);
    comm.all_reduce(buffer, ReduceOp::kSum);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every rank's communicator is gone
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(buffer.sum().item<double>(), double(1 << 20) * size);
  buffer.fill_(2);
  EXPECT_EQ(buffer[7].item<float>(), 2.0f);
}

TEST(MpiComm, BroadcastAndAllGather) {
  MpiComm comm(MPI_COMM_WORLD);
  torch::Tensor t = contribution(comm.rank(), 16);
  comm.broadcast(t, 0);
  EXPECT_TRUE(torch::equal(t, contribution(0, 16)));

  torch::Tensor mine = torch::full({2, 3}, static_cast<int64_t>(comm.rank()), torch::kLong);
  torch::Tensor all = comm.all_gather(mine);
  ASSERT_EQ(all.sizes(), (std::vector<int64_t>{comm.size(), 2, 3}));
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(all[r][1][2].item<int64_t>(), r);
}

TEST(Topology, OneNodeUnderMpirun) {
  const Topology t = Topology::detect(MPI_COMM_WORLD);
  // ctest launches every MPI test on this one machine.
  EXPECT_EQ(t.node_count, 1);
  EXPECT_EQ(t.node_index, 0);
  EXPECT_EQ(t.local_size, t.world_size);
  EXPECT_EQ(t.local_rank, t.world_rank);
  EXPECT_TRUE(t.uniform());
}

}  // namespace
}  // namespace ddpt
