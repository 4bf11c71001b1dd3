// MpiComm collectives on random tensors against values computed independently on every rank.
#include <gtest/gtest.h>

#include "comm/mpi_comm.hpp"
#include "runtime/topology.hpp"

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

TEST(MpiComm, ReduceScatterGivesEachRankItsBlockOfTheSum) {
  MpiComm comm(MPI_COMM_WORLD);
  const int64_t block = 1001;
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
        << c10::toString(dtype);
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
