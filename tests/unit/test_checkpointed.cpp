// The parts of a run's state save and load themselves through StateWriter/StateReader
// (state/checkpointed.hpp); here through the HDF5 ones a checkpoint uses, in a one-process file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "h5/h5_file.hpp"
#include "io/h5_state.hpp"
#include "optim/ema.hpp"
#include "run/early_stopping.hpp"
#include "step/loss_scaler.hpp"
#include "step/spike_guard.hpp"

namespace ddpt {
namespace {

class CheckpointedObjects : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("ddptrain_checkpointed_" + std::to_string(::getpid()) + ".h5");
  }
  void TearDown() override { std::filesystem::remove(path_); }

  void save(const std::vector<const ddpt::Checkpointed*>& parts) {
    H5File file = H5File::create(path_.string());
    H5StateWriter writer(file.open_group("/"), /*rank=*/0, /*world_size=*/1);
    for (const auto* part : parts) part->save(writer);
  }
  void load(const std::vector<ddpt::Checkpointed*>& parts) {
    const H5File file = H5File::open_read(path_.string());
    const H5StateReader reader(file.open_group("/"), 0, 1, 1);
    for (auto* part : parts) part->load(reader);
  }
  std::filesystem::path path_;
};

EarlyStoppingOptions patient(int64_t patience) {
  return {patience, /*min_delta=*/0.0};
}

TEST_F(CheckpointedObjects, CountersAndScalesContinueWhereTheyWereSaved) {
  LossScaler scaler(1024, /*growth_interval=*/3, /*backoff=*/0.5);
  scaler.update(true);
  scaler.update(true);  // two good steps of three
  EarlyStopping stopping(patient(2));
  EXPECT_FALSE(stopping.should_stop(1.0));
  EXPECT_FALSE(stopping.should_stop(1.5));  // one evaluation without improvement
  save({&scaler, &stopping});

  LossScaler resumed_scaler(1, 3, 0.5);
  EarlyStopping resumed_stopping(patient(2));
  load({&resumed_scaler, &resumed_stopping});
  EXPECT_EQ(resumed_scaler.scale(), 1024);
  resumed_scaler.update(true);  // the third good step: the scale doubles
  EXPECT_EQ(resumed_scaler.scale(), 2048);
  EXPECT_EQ(resumed_stopping.evals_without_improvement(), 1);
  EXPECT_TRUE(resumed_stopping.should_stop(1.2)) << "two evaluations without improvement";
}

// Checkpoints of earlier versions stored every counter as a float64 attribute of /loop.
TEST_F(CheckpointedObjects, CountersSavedAsFloatsByEarlierVersionsLoad) {
  {
    H5File file = H5File::create(path_.string());
    const H5Group loop = file.create_group("loop");
    loop.write_attribute("loss_scale", 512.0);
    loop.write_attribute("loss_scale_good_steps", 2.0);
    loop.write_attribute("spike_mean", 3.0);
    loop.write_attribute("spike_seen", 5.0);
    loop.write_attribute("spike_lr_factor", 0.25);
  }
  LossScaler scaler(1, 3, 0.5);
  SpikeGuard guard(SpikeGuardOptions{/*factor=*/2.0, /*lr_factor=*/0.5, /*window=*/5});
  load({&scaler, &guard});
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 1024);  // 512 after its third good step
  EXPECT_DOUBLE_EQ(guard.mean(), 3.0);
  EXPECT_DOUBLE_EQ(guard.lr_factor(), 0.25);
  EXPECT_TRUE(guard.is_spike(6.5)) << "the window of 5 is full after loading 5 seen losses";
}

TEST_F(CheckpointedObjects, TheMovingAverageStartsAtTheWeightsOfACheckpointWithoutOne) {
  const torch::Tensor w = torch::ones({2, 2});
  Ema ema({{"w", w}}, 0.9);
  {
    H5File file = H5File::create(path_.string());
    H5StateWriter writer(file.open_group("/"), 0, 1);
    writer.group("model")->tensor("w", torch::full({2, 2}, 3.0));
  }
  load({&ema});
  EXPECT_TRUE(ema.averages()[0].equal(torch::full({2, 2}, 3.0)));
  save({&ema});
  Ema resumed({{"w", w}}, 0.9);
  load({&resumed});
  EXPECT_TRUE(resumed.averages()[0].equal(torch::full({2, 2}, 3.0)));
}

}  // namespace
}  // namespace ddpt
