// Benchmark (not a test; prints figures): checkpoint write and read time for a ~100 MB model
// with its AdamW state, against torch::save of the same tensors, and the cost of one metrics.h5
// row. Run under mpirun at 1 and 2 ranks; see checkpoint_io.sh, which adds a dd of the same bytes.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "app/process_tuning.hpp"
#include "comm/mpi_comm.hpp"
#include "io/checkpoint.hpp"
#include "io/metrics_writer.hpp"
#include "median.hpp"
#include "models/mlp.hpp"
#include "runtime/mpi_env.hpp"
#include "train/optimizer.hpp"
#include "train/optimizer_state.hpp"
#include "util/log.hpp"
#include "util/stopwatch.hpp"

namespace {

constexpr int kRepeats = 3;  // median of 3: the disk and page cache are noisy

using ddpt::bench::median;

}  // namespace

int main(int argc, char** argv) {
  using namespace ddpt;
  tune_process();  // as ddptrain does: MPI-IO through ROMIO, malloc keeping freed memory
  MpiEnv mpi(&argc, &argv);
  init_logging(mpi.world_rank(), mpi.host());
  const std::string dir = argc > 1 ? argv[1] : "/tmp/ddptrain_checkpoint_bench";
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(1);
  // 2048 -> 6 x 2048 -> 2048: 29.4M float32 parameters = 118 MB, plus 2 AdamW moments.
  Mlp model(2048, std::vector<int64_t>(6, 2048), 2048);
  const auto params = model.named_parameters();
  std::vector<torch::Tensor> tensors;
  for (const auto& p : params) tensors.push_back(p.tensor);
  OptimConfig adamw;
  auto optimizer = make_optimizer(adamw, params);
  model.forward(torch::randn({8, 2048})).sum().backward();
  optimizer->step();  // creates the optimizer state
  OptimizerCheckpoint optimizer_state(*optimizer, params, "adamw");
  CheckpointRegistry registry;
  registry.add(optimizer_state);
  const CheckpointContents state{params, {}, "[bench]\n", &registry};
  const bool rank0 = comm.rank() == 0;
  if (rank0) std::filesystem::create_directories(dir);

  std::vector<double> write_s, read_s, torch_s;
  std::string path;
  for (int r = 0; r < kRepeats; ++r) {
    comm.barrier();
    Stopwatch w;
    path = save_checkpoint(dir, 100 + r, 0, state, MPI_COMM_WORLD, CheckpointConfig{1, 1});
    comm.barrier();
    write_s.push_back(w.seconds());
    Stopwatch rd;
    load_checkpoint(path, state, comm.rank(), comm.size());
    comm.barrier();
    read_s.push_back(rd.seconds());
    if (rank0) {
      std::vector<torch::Tensor> all = tensors;
      for (const auto& t : export_optimizer_state(*optimizer, params)) all.push_back(t.tensor);
      Stopwatch ts;
      torch::save(all, dir + "/torch_save.pt");
      torch_s.push_back(ts.seconds());
    }
  }
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;

  double append_us = 0;
  if (rank0) {
    auto metrics = MetricsWriter::create_or_resume(
        dir + "/metrics.h5", RunDescription{"bench", 1, 1, "cpu", "mpi", ""}, 0,
        /*log_every=*/1);
    constexpr int kRows = 1000;
    Stopwatch m;
    for (int i = 0; i < kRows; ++i)
      metrics->append(StepRecord{i, 0, 1.0, 1e-3, 1.0, 1.0, 1.0, 0.0});
    append_us = m.seconds() / kRows * 1e6;
    std::printf(
        "ranks=%d checkpoint_mb=%.1f write_s=%.3f read_s=%.3f torch_save_s=%.3f "
        "write_mb_per_s=%.0f torch_save_mb_per_s=%.0f metrics_row_us=%.0f\n",
        comm.size(), mb, median(write_s), median(read_s), median(torch_s), mb / median(write_s),
        mb / median(torch_s), append_us);
  }
  comm.barrier();
  if (rank0) std::filesystem::remove_all(dir);
  return 0;
}
