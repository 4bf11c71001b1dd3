// Checkpoints: a run resumed from step 20 repeats the uninterrupted run's losses and parameters
// bit for bit (CPU backend); damaged or foreign checkpoints are refused with an error naming
// the file and the object. Runs at any world size.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "comm/mpi_comm.hpp"
#include "data/synthetic_classification.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_writer_thread.hpp"
#include "optim/optimizer_state.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "state/rng_state.hpp"
#include "support/training_fixture.hpp"
#include "util/error.hpp"

namespace ddpt::testing {
namespace {

namespace fs = std::filesystem;

// A directory every rank agrees on (rank 0 makes it; the name is broadcast).
std::string shared_temp_dir() {
  std::array<char, 256> name{};
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::string pattern = (fs::temp_directory_path() / "ddptrain_ckpt_XXXXXX").string();
    ::mkdtemp(pattern.data());
    std::copy(pattern.begin(), pattern.end(), name.begin());
  }
  MPI_Bcast(name.data(), static_cast<int>(name.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  return name.data();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct TrainedState {
  std::vector<double> losses;  // one per step run (log.every = 1)
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> ema;  // moving averages, when train.ema_decay > 0
};

// Writes the checkpoints the run asks for with save_checkpoint (keeping 10), and nothing else.
class CheckpointsOnly : public DiscardedOutput {
 public:
  CheckpointsOnly(std::string dir, const CheckpointContents& state, HostGroup& group)
      : dir_(std::move(dir)), state_(state), group_(group) {}
  CheckpointWritten checkpoint(int64_t step, int64_t epoch,
                               std::optional<double> /*eval_loss*/) override {
    CheckpointWritten written;
    written.path = save_checkpoint(dir_, step, epoch, state_, group_, Retention{10});
    return written;
  }

 private:
  std::string dir_;
  const CheckpointContents& state_;
  HostGroup& group_;
};

// Trains `deck` on all ranks; saves a checkpoint every `every` steps; resumes from `resume`.
TrainedState run(const Config& deck, int64_t every, const std::string& resume) {
  Config config = deck;
  config.checkpoint.every = every;
  MpiComm comm(MPI_COMM_WORLD);
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const SyntheticClassification data(synthetic_spec_of(config.data, config.run.seed));
  auto model = make_model(config.model, config.data.features, config.data.classes);
  TrainingRun training(
      run_options(config, comm.size()),
      RunParts{comm, plan_sharding(config, comm.size(), comm.device()), group, *model, data});
  CheckpointRegistry registry;
  training.register_state(registry);
  const CheckpointContents state{model->named_parameters(), model->named_buffers(),
                                 config.resolved_text, &registry, training.sharded_weights()};
  if (!resume.empty()) training.resume_at(load_checkpoint(resume, state, comm.rank(), comm.size()));
  CheckpointsOnly output(config.run.dir, state, group);
  TrainedState result;
  for (const auto& record : training.run(output).records) result.losses.push_back(record.loss);
  {
    const auto whole = training.trainer().whole_parameters();  // ZeRO-3: gathered to be read
    for (const auto& p : model->named_parameters())
      result.params.push_back(p.tensor.detach().clone());
  }
  result.ema = training.trainer().ema_averages();
  return result;
}

Config resume_config(const std::string& dir) {
  Config c = small_config(OptimizerType::kAdamW);
  c.train.steps = 40;
  c.log.every = 1;
  c.run.dir = dir;
  return c;
}

void expect_exact_resume(double ema_decay, int64_t zero = 0) {
  const std::string dir = shared_temp_dir();
  Config config = resume_config(dir);
  config.train.ema_decay = ema_decay;
  config.ddp.zero = zero;
  config.ddp.first_bucket_mb = 1000 * 4 / 1048576.0;  // several buckets: ZeRO-1 blocks cut
  config.ddp.bucket_mb = 2000 * 4 / 1048576.0;        // parameters
  const TrainedState whole = run(config, 20, "");
  ASSERT_EQ(whole.losses.size(), 40u);
  const std::string at20 = dir + "/checkpoints/step_00000020.h5";
  ASSERT_TRUE(fs::exists(at20));
  EXPECT_EQ(fs::read_symlink(dir + "/checkpoints/latest"), "step_00000040.h5");
  EXPECT_EQ(latest_checkpoint(dir), fs::canonical(dir + "/checkpoints/step_00000040.h5").string());

  const TrainedState resumed = run(config, 0, at20);
  ASSERT_EQ(resumed.losses.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(resumed.losses[i], whole.losses[20 + i]) << "step " << 21 + i;
  }
  ASSERT_EQ(resumed.params.size(), whole.params.size());
  for (size_t i = 0; i < whole.params.size(); ++i) {
    EXPECT_TRUE(torch::equal(resumed.params[i], whole.params[i])) << "parameter " << i;
  }
  ASSERT_EQ(resumed.ema.size(), ema_decay > 0 ? whole.params.size() : 0u);
  for (size_t i = 0; i < resumed.ema.size(); ++i) {
    EXPECT_TRUE(torch::equal(resumed.ema[i], whole.ema[i])) << "moving average " << i;
    EXPECT_FALSE(torch::equal(whole.ema[i], whole.params[i])) << "the average is the weights";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) fs::remove_all(dir);
}

TEST(Checkpoint, ResumedRunRepeatsTheUninterruptedRunBitForBit) {
  expect_exact_resume(0.0);
}

TEST(Checkpoint, ResumedRunContinuesTheMovingAverageBitForBit) {
  expect_exact_resume(0.9);
}

// ZeRO-1: each rank saves its shard of the optimizer state into the full-size datasets and reads
// it back.
TEST(Checkpoint, ZeroResumedRunRepeatsTheUninterruptedRunBitForBit) {
  expect_exact_resume(0.0, 1);
}

// ZeRO-3: each rank saves its shard of the parameters as well, and reads it back; with a moving
// average, its shard of the average too.
TEST(Checkpoint, Zero3ResumedRunRepeatsTheUninterruptedRunBitForBit) {
  expect_exact_resume(0.0, 3);
}
TEST(Checkpoint, Zero3ResumedRunContinuesTheMovingAverageBitForBit) {
  expect_exact_resume(0.9, 3);
}

// The message of the error (exit code 3) that loading `path` raises ("" if none), and whether
// it is raised on every rank alike or on this rank alone.
struct LoadError {
  std::string message;
  Raised raised = Raised::kThisRank;
};
LoadError load_error(const std::string& path, const Config& config) {
  try {
    run(config, 0, path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kData) << e.what();
    return {e.what(), e.raised()};
  }
  return {};
}

TEST(Checkpoint, DamagedOrForeignCheckpointsAreRefusedByName) {
  const std::string dir = shared_temp_dir();
  Config config = resume_config(dir);
  config.train.steps = 4;
  run(config, 4, "");
  const std::string good = dir + "/checkpoints/step_00000004.h5";
  const std::string flipped = dir + "/flipped.h5";
  const std::string truncated = dir + "/truncated.h5";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::string bytes = file_bytes(good);
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    // Every float stored is part of some dataset; flip a byte two thirds into the file, inside
    // the model or optimizer data (metadata sits at the start and the end).
    bytes[bytes.size() * 2 / 3] ^= 0x5A;
    std::ofstream(flipped, std::ios::binary) << bytes;
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // A checksum error is this rank's own (another node may read the file fine): the job must be
  // aborted, so naming the file on the way up must not make it a collective error.
  const LoadError flipped_error = load_error(flipped, config);
  EXPECT_NE(flipped_error.message.find("flipped.h5"), std::string::npos) << flipped_error.message;
  EXPECT_NE(flipped_error.message.find("checksum"), std::string::npos) << flipped_error.message;
  EXPECT_EQ(flipped_error.raised, Raised::kThisRank);

  const LoadError truncated_error = load_error(truncated, config);
  EXPECT_NE(truncated_error.message.find("truncated.h5"), std::string::npos)
      << truncated_error.message;

  // Another model: every rank compares the same signature, so every rank raises it.
  Config other = config;
  other.model.hidden = "64,32";  // another shape
  const LoadError other_error = load_error(good, other);
  EXPECT_NE(other_error.message.find("model_signature"), std::string::npos) << other_error.message;
  EXPECT_EQ(other_error.raised, Raised::kAllRanks);

  Config sgd = config;
  sgd.optim.type = OptimizerType::kSgd;
  EXPECT_NE(load_error(good, sgd).message.find("/optimizer"), std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpt::testing

namespace ddpt::testing {
namespace {

// checkpoint.keep_best: the checkpoint with the lowest eval loss survives pruning even when it is
// not among the newest, and checkpoints/best points at it.
TEST(Checkpoint, KeepBestKeepsTheLowestEvalLossBesideTheNewest) {
  const std::string dir = shared_temp_dir();
  torch::manual_seed(5);
  auto weight = torch::randn({3, 4});
  torch::optim::SGD sgd({weight}, torch::optim::SGDOptions(0.1));
  OptimizerCheckpoint optimizer_state(sgd, {{"w", weight}}, "sgd");
  CheckpointRegistry registry;
  registry.add(optimizer_state);
  const CheckpointContents state{{{"w", weight}}, {}, "", &registry};
  const Retention retention{/*keep=*/1, /*keep_best=*/true};
  const std::vector<double> eval_losses{3.0, 1.0, 2.0, 4.0};  // best at step 2
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  for (int64_t step = 1; step <= 4; ++step) {
    save_checkpoint(dir, step, 0, state, group, retention, eval_losses[step - 1]);
  }
  std::vector<std::string> kept;
  for (const auto& entry : fs::directory_iterator(fs::path(dir) / "checkpoints")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0) kept.push_back(name);
  }
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"step_00000002.h5", "step_00000004.h5"}));
  EXPECT_EQ(fs::read_symlink(fs::path(dir) / "checkpoints" / "best"), "step_00000002.h5");
  EXPECT_EQ(fs::read_symlink(fs::path(dir) / "checkpoints" / "latest"), "step_00000004.h5");
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) fs::remove_all(dir);
}

// The same state makes the same file, byte for byte, whenever it is written: no modification
// times in object headers. What lets a user compare checkpoints by checksum, and an asynchronous
// write be checked against a synchronous one.
TEST(Checkpoint, TheSameStateWrittenTwiceIsTheSameFile) {
  const std::string dir = shared_temp_dir();
  torch::manual_seed(5);
  auto weight = torch::randn({3, 4});
  torch::optim::SGD sgd({weight}, torch::optim::SGDOptions(0.1).momentum(0.9));
  weight.mutable_grad() = torch::ones({3, 4});
  sgd.step();
  OptimizerCheckpoint optimizer_state(sgd, {{"w", weight}}, "sgd");
  CpuRngState rng;
  CheckpointRegistry registry;
  registry.add(optimizer_state);
  registry.add(rng);
  const CheckpointContents state{{{"w", weight}}, {}, "[run]\n", &registry};
  const Retention retention{/*keep=*/1, /*keep_best=*/false};
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  const std::string first = save_checkpoint(dir + "/a", 7, 0, state, group, retention);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // another second on the clock
  const std::string second = save_checkpoint(dir + "/b", 7, 0, state, group, retention);
  // checkpoint.async's way: a host copy of the state, written by the background thread after
  // the state has moved on.
  std::string third;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    auto snapshot = std::make_shared<StateSnapshot>(rank, /*copy=*/true);
    save_state(*snapshot, 7, 0, state, size);
    CheckpointWriterThread writer(group);
    writer.start(dir + "/c", 7, snapshot, retention);
    sgd.step();  // training goes on while the file is written
    const std::optional<CheckpointWritten> written = writer.wait();
    ASSERT_TRUE(written.has_value());
    third = written->path;
  }
  if (rank == 0) {
    const std::string a = file_bytes(first);
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == file_bytes(second)) << first << " and " << second << " differ";
    EXPECT_TRUE(a == file_bytes(third))
        << first << " and the background write " << third << " differ";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::remove_all(dir);
}

// Bytes this process has read through read(2)-like calls so far (/proc/self/io "rchar").
int64_t bytes_read_by_process() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  ADD_FAILURE() << "no rchar in /proc/self/io";
  return 0;
}

// Writing a checkpoint reads nothing of it back. ROMIO's data sieving did read-modify-write
// every chunked dataset it wrote: a 1.26 GB checkpoint read 1.26 GB back as it was written.
TEST(Checkpoint, AWriteReadsNothingBack) {
  const std::string dir = shared_temp_dir();
  torch::manual_seed(6);
  const torch::Tensor weight = torch::randn({4, 1 << 20});  // 16 MiB: four 4 MiB chunks
  const CheckpointContents state{{{"w", weight}}, {}, "[run]\n", nullptr};
  const Retention retention{/*keep=*/1, /*keep_best=*/false};
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  const int64_t before = bytes_read_by_process();
  save_checkpoint(dir, 1, 0, state, group, retention);
  const int64_t read = bytes_read_by_process() - before;
  EXPECT_LT(read, int64_t{1} << 20) << read << " bytes read while writing 16 MiB";
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpt::testing
