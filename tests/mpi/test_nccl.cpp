// NCCL backend. The bootstrap (rank 0's unique id reaching every rank over MPI) needs no GPU and
// runs everywhere; collectives need a GPU and a LibTorch with CUDA, and skip cleanly without.
#include <gtest/gtest.h>

#include <cstring>

#include "dist/communicator.hpp"
#include "dist/make_communicator.hpp"

#ifdef DDPTRAIN_HAVE_NCCL
#include "dist/nccl_bootstrap.hpp"
#endif

namespace ddpt {
namespace {

#ifdef DDPTRAIN_HAVE_NCCL
TEST(NcclBootstrap, EveryRankGetsRankZerosUniqueId) {
  const ncclUniqueId id = broadcast_nccl_unique_id(MPI_COMM_WORLD);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(sizeof(id) * static_cast<size_t>(size));
  MPI_Allgather(&id, sizeof(id), MPI_BYTE, all.data(), sizeof(id), MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 1; r < size; ++r) {
    EXPECT_EQ(std::memcmp(all.data(), all.data() + r * sizeof(id), sizeof(id)), 0)
        << "rank " << r << " holds a different id";
  }
  bool any_nonzero = false;
  for (char byte : std::string(id.internal, sizeof(id.internal))) any_nonzero |= byte != 0;
  EXPECT_TRUE(any_nonzero) << "ncclGetUniqueId returned an empty id";
  EXPECT_FALSE(nccl_version().empty());
}
#endif

TEST(NcclComm, OneRankAllReduceOnGpu) {
  if (!nccl_compiled()) GTEST_SKIP() << "built without NCCL";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device usable by LibTorch";
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const torch::Device device(torch::kCUDA, 0);
  auto comm = make_communicator("nccl", device, MPI_COMM_SELF);  // one GPU: a 1-rank communicator
  torch::manual_seed(5);
  const torch::Tensor host = torch::randn({4096});
  torch::Tensor t = host.to(device);
  comm->all_reduce(t, ReduceOp::kSum);
  EXPECT_TRUE(torch::allclose(t.cpu(), host));
  comm->all_reduce(t, ReduceOp::kAvg);
  EXPECT_TRUE(torch::allclose(t.cpu(), host));
  torch::Tensor b = torch::randn({16}).to(device);
  const torch::Tensor before = b.cpu();
  comm->broadcast(b, 0);
  EXPECT_TRUE(torch::equal(b.cpu(), before));
  EXPECT_EQ(comm->all_gather(b).size(0), 1);
  comm->barrier();
}

}  // namespace
}  // namespace ddpt
