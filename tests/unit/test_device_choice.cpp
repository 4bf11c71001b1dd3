#include <gtest/gtest.h>

#include <thread>

#include "runtime/device.hpp"
#include "runtime/job.hpp"

namespace ddpt {
namespace {

Topology node_with(int local_size) {
  Topology t;
  t.world_size = local_size;
  t.local_size = local_size;
  t.min_local_size = t.max_local_size = local_size;
  return t;
}

TEST(DeviceChoice, ExplicitThreadsWin) {
  ThreadHints hints;
  hints.requested = 3;
  hints.omp_num_threads = 5;
  hints.slurm_cpus_per_task = 7;
  const DeviceChoice choice = choose_device(node_with(2), hints);
  EXPECT_EQ(choice.threads, 3);
  EXPECT_EQ(choice.threads_why, "train.threads");
}

TEST(DeviceChoice, OmpNumThreadsThenSlurmCpusPerTask) {
  ThreadHints hints;
  hints.omp_num_threads = 5;
  hints.slurm_cpus_per_task = 7;
  EXPECT_EQ(choose_device(node_with(2), hints).threads, 5);
  hints.omp_num_threads.reset();
  EXPECT_EQ(choose_device(node_with(2), hints).threads, 7);
  EXPECT_EQ(choose_device(node_with(2), hints).threads_why, "SLURM_CPUS_PER_TASK");
}

TEST(DeviceChoice, OtherwiseCoresAreSharedAmongTheNodesRanks) {
  const int cores = cores_available();
  const DeviceChoice one = choose_device(node_with(1), {});
  EXPECT_EQ(one.threads, cores);
  const bool bound = cores < static_cast<int>(std::thread::hardware_concurrency());
  // Many more ranks than cores: never fewer than one thread (a bound process keeps its cores).
  EXPECT_EQ(choose_device(node_with(cores * 4), {}).threads, bound ? cores : 1);
  if (!torch::cuda::is_available()) EXPECT_TRUE(one.device.is_cpu());
}

}  // namespace
}  // namespace ddpt

namespace ddpt {
namespace {

// More ranks than GPUs on a node is refused, naming the counts; the test switch lets them share a
// GPU only where the rank has its own NCCL_HOSTID.
TEST(GpuSharing, RefusedUnlessTheTestSwitchAndAHostIdAreBothSet) {
  LaunchEnvironment launch;
  EXPECT_EQ(gpu_sharing_refusal(1, 1, false, launch), "");
  EXPECT_EQ(gpu_sharing_refusal(4, 4, false, launch), "");
  EXPECT_NE(
      gpu_sharing_refusal(2, 1, false, launch).find("2 ranks on this node but 1 GPU(s) visible"),
      std::string::npos);
  launch.nccl_hostid = "rank1";  // a host id alone changes nothing
  EXPECT_NE(gpu_sharing_refusal(2, 1, false, launch), "");
  EXPECT_EQ(gpu_sharing_refusal(2, 1, true, launch), "");
  launch.nccl_hostid.clear();
  EXPECT_NE(gpu_sharing_refusal(2, 1, true, launch).find("its own NCCL_HOSTID"), std::string::npos);
}

}  // namespace
}  // namespace ddpt
