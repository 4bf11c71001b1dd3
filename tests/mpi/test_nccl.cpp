// NCCL backend. The bootstrap (rank 0's unique id reaching every rank over MPI) needs no GPU and
// runs everywhere; collectives need a GPU and a LibTorch with CUDA, the handle a GPU, and each
// case skips cleanly without. ctest runs each GPU case as a test of its own
// (e2e/skip_without_gpu.sh): skipped only where nvidia-smi lists no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <utility>

#include "comm/communicator.hpp"
#include "comm/make_communicator.hpp"

#ifdef DDPTRAIN_HAVE_NCCL
#include <cuda_runtime.h>

#include "comm/nccl_bootstrap.hpp"
#include "comm/nccl_handle.hpp"
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
  auto comm =
      make_communicator(Backend::kNccl, device, MPI_COMM_SELF);  // one GPU: a 1-rank communicator
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

#ifdef DDPTRAIN_HAVE_NCCL
// The handle needs the CUDA runtime and a device, not LibTorch's CUDA: these cases also run in a
// build against a CPU LibTorch.
bool cuda_device_present() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

// A one-rank communicator on GPU 0 (collective over MPI_COMM_SELF only).
NcclHandle one_rank_handle() {
  EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
  return NcclHandle(1, broadcast_nccl_unique_id(MPI_COMM_SELF), 0);
}

// ZeRO-1's collectives on one GPU: a 1-rank reduce-scatter copies, an in-place all-gather keeps.
TEST(NcclComm, OneRankReduceScatterAndAllGatherOnGpu) {
  if (!nccl_compiled()) GTEST_SKIP() << "built without NCCL";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device usable by LibTorch";
  const torch::Device device(torch::kCUDA, 0);
  auto comm = make_communicator(Backend::kNccl, device, MPI_COMM_SELF);
  torch::manual_seed(6);
  const torch::Tensor host = torch::randn({1000});
  torch::Tensor out = torch::zeros({1000}, torch::TensorOptions().device(device));
  comm->reduce_scatter_async(host.to(device), out)->wait();
  EXPECT_TRUE(torch::equal(out.cpu(), host));
  torch::Tensor gathered = host.to(device);
  comm->all_gather_in_place_async(gathered)->wait();
  EXPECT_TRUE(torch::equal(gathered.cpu(), host));
}

TEST(NcclComm, HandleAbortIsIdempotentAndReachesMovedHandles) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  NcclHandle first = one_rank_handle();
  NcclHandle handle(std::move(first));
  EXPECT_EQ(first.get(), nullptr);
  ASSERT_NE(handle.get(), nullptr);
  EXPECT_FALSE(handle.aborted());
  EXPECT_FALSE(handle.ends_by_abort());
  const ncclComm_t raw = handle.get();
  NcclHandle::abort_all();  // finds the handle at its new place
  EXPECT_TRUE(handle.aborted());
  EXPECT_TRUE(handle.ends_by_abort());
  EXPECT_EQ(handle.get(), raw);  // marked aborted, pointer left as it was
  handle.abort();                // a second abort does nothing
  EXPECT_TRUE(handle.aborted());
}

TEST(NcclComm, HandleEndsByAbortDuringUnwinding) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  // Destroyed before the handle (reverse order), so it sees what the handle's destructor sees.
  struct Probe {
    const NcclHandle& handle;
    bool& ends_by_abort;
    ~Probe() { ends_by_abort = handle.ends_by_abort(); }
  };
  bool normal = true;
  {
    NcclHandle handle = one_rank_handle();
    Probe probe{handle, normal};
  }
  EXPECT_FALSE(normal);
  bool unwinding = false;
  try {
    NcclHandle handle = one_rank_handle();
    Probe probe{handle, unwinding};
    throw std::runtime_error("unwind");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(unwinding);
}
#endif

}  // namespace
}  // namespace ddpt
