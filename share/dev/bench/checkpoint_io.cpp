// Benchmark (not a test; prints figures): checkpoint write and read time for a ~100 MB model
// with its AdamW state, against torch::save of the same tensors and a plain write of the file's
// bytes (as dd bs=1M conv=fsync does), and the cost of one metrics.h5 row. Run under mpirun at 1
// and 2 ranks; see checkpoint_io.sh.
//
// The three writers take turns within each round, and each writes a new file while its previous
// one still exists, deleting that one afterwards, outside its timed write (a training run with
// checkpoint.keep = 1 deletes it inside save_checkpoint: the bench times that deletion apart and
// prints both the write alone and the write plus the deletion). So each finds the same state of
// the page cache: on a VM that hands freed memory back to its host,
// a write into pages the host must provide again can take several times as long as one into
// pages freed a moment before (README, share/dev/bench/zero_checkpoint.sh), which makes a
// comparison of writes made at different moments meaningless.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "benchmarks.hpp"
#include "comm/mpi_comm.hpp"
#include "h5/h5_fletcher32.hpp"
#include "io/checkpoint.hpp"
#include "io/metrics_writer.hpp"
#include "median.hpp"
#include "models/mlp.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_state.hpp"
#include "runtime/mpi_env.hpp"
#include "runtime/process_tuning.hpp"
#include "util/log.hpp"
#include "util/stopwatch.hpp"

namespace ddpt::bench::checkpoint_io {

constexpr int kRepeats = 5;  // median of 5: the disk and page cache are noisy

using ddpt::bench::median;

// dd if=/dev/zero of=PATH bs=1M count=... conv=fsync, in seconds: `bytes` written in 1 MiB
// blocks from one zeroed block, then fsync. Throws if a write fails.
double plain_write_seconds(const std::filesystem::path& path, int64_t bytes) {
  constexpr int64_t kBlock = int64_t{1} << 20;
  const std::vector<char> block(kBlock, 0);
  ddpt::Stopwatch watch;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), path.string());
  for (int64_t done = 0; done < bytes;) {
    const ssize_t n =
        ::write(fd, block.data(), static_cast<size_t>(std::min(kBlock, bytes - done)));
    if (n <= 0) {
      ::close(fd);
      throw std::system_error(errno, std::generic_category(), path.string());
    }
    done += n;
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) throw std::system_error(errno, std::generic_category(), path.string());
  return watch.seconds();
}

}  // namespace ddpt::bench::checkpoint_io

int ddpt::bench::run_checkpoint(int argc, char** argv) {
  using namespace checkpoint_io;
  using namespace ddpt;
  tune_process();  // as ddptrain does: MPI-IO through ROMIO, malloc keeping freed memory
  MpiEnv mpi(&argc, &argv);
  init_logging(mpi.world_rank(), mpi.host());
  const std::string dir = argc > 1 ? argv[1] : "/tmp/ddptrain_checkpoint_bench";
  MpiComm comm(MPI_COMM_WORLD);
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  torch::manual_seed(1);
  // 2048 -> 6 x 2048 -> 2048: 29.4M float32 parameters = 118 MB, plus 2 AdamW moments.
  Mlp model(2048, std::vector<int64_t>(6, 2048), 2048);
  const auto params = model.named_parameters();
  std::vector<torch::Tensor> tensors;
  for (const auto& p : params) tensors.push_back(p.tensor);
  OptimizerSpec adamw;
  auto optimizer = make_optimizer(adamw, params);
  model.forward(torch::randn({8, 2048})).sum().backward();
  optimizer->step();  // creates the optimizer state
  OptimizerCheckpoint optimizer_state(*optimizer, params, "adamw");
  CheckpointRegistry registry;
  registry.add(optimizer_state);
  const CheckpointContents state{params, {}, "[bench]\n", &registry};
  const bool rank0 = comm.rank() == 0;
  if (rank0) std::filesystem::create_directories(dir);

  std::vector<double> write_s, prune_s, read_s, torch_s, plain_s;
  std::string path;
  const auto numbered = [&](const char* name, int r) {
    return std::filesystem::path(dir) / (name + std::to_string(r));
  };
  // Every checkpoint kept by save_checkpoint; the bench deletes the previous one itself.
  const Retention keep_all{kRepeats + 1};
  for (int r = 0; r < kRepeats; ++r) {
    comm.barrier();
    Stopwatch w;
    const std::string previous = path;
    path = save_checkpoint(dir, 100 + r, 0, state, group, keep_all);
    comm.barrier();
    write_s.push_back(w.seconds());
    Stopwatch p;
    if (rank0 && !previous.empty()) std::filesystem::remove(previous);
    comm.barrier();
    prune_s.push_back(p.seconds());
    Stopwatch rd;
    load_checkpoint(path, state, comm.rank(), comm.size());
    comm.barrier();
    read_s.push_back(rd.seconds());
    if (rank0) {
      std::vector<torch::Tensor> all = tensors;
      for (const auto& t : export_optimizer_state(*optimizer, params)) all.push_back(t.tensor);
      Stopwatch ts;
      torch::save(all, numbered("torch_save.pt.", r).string());
      torch_s.push_back(ts.seconds());
      std::filesystem::remove(numbered("torch_save.pt.", r - 1));
      plain_s.push_back(plain_write_seconds(
          numbered("plain.bin.", r), static_cast<int64_t>(std::filesystem::file_size(path))));
      std::filesystem::remove(numbered("plain.bin.", r - 1));
    }
  }
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;

  double append_us = 0;
  if (rank0) {
    auto metrics = MetricsWriter::create_or_resume(
        dir + "/metrics.h5", MetricsHeader{"bench", 1, 1, "cpu", "mpi", ""}, 0,
        /*log_every=*/1);
    constexpr int kRows = 1000;
    Stopwatch m;
    for (int i = 0; i < kRows; ++i)
      metrics->append(StepRecord{i, 0, 1.0, 1e-3, 1.0, 1.0, 1.0, 0.0});
    append_us = m.seconds() / kRows * 1e6;
    const double best_write = *std::min_element(write_s.begin(), write_s.end());
    const double best_plain = *std::min_element(plain_s.begin(), plain_s.end());
    std::vector<double> write_prune_s;
    for (int r = 1; r < kRepeats; ++r) write_prune_s.push_back(write_s[r] + prune_s[r]);
    const double best_write_prune = *std::min_element(write_prune_s.begin(), write_prune_s.end());
    std::printf(
        "ranks=%d checkpoint_mb=%.1f write_s=%.3f read_s=%.3f torch_save_s=%.3f "
        "plain_write_s=%.3f write_mb_per_s=%.0f torch_save_mb_per_s=%.0f "
        "plain_write_mb_per_s=%.0f write_vs_plain=%.2fx best_write_vs_best_plain=%.2fx "
        "metrics_row_us=%.0f\n",
        comm.size(), mb, median(write_s), median(read_s), median(torch_s), median(plain_s),
        mb / median(write_s), mb / median(torch_s), mb / median(plain_s),
        median(plain_s) / median(write_s), best_plain / best_write, append_us);
    // What a run with checkpoint.keep = 1 stalls for: the write and the previous file's deletion.
    std::printf(
        "  with the previous checkpoint's deletion (rounds 2-%d, as keep = 1 does it): "
        "delete_s=%.3f write_and_delete_s=%.3f best_write_and_delete_vs_best_plain=%.2fx\n",
        kRepeats, median(std::vector<double>(prune_s.begin() + 1, prune_s.end())),
        median(write_prune_s), best_plain / best_write_prune);
    std::printf("  HDF5 %s\n", hdf5_checksum_text().c_str());  // who sums Fletcher32
    std::printf("  per round (s): checkpoint");
    for (const double t : write_s) std::printf(" %.3f", t);
    std::printf(", its previous file's deletion");
    for (int r = 1; r < kRepeats; ++r) std::printf(" %.3f", prune_s[r]);
    std::printf(", plain write");
    for (const double t : plain_s) std::printf(" %.3f", t);
    std::printf("\n");
  }
  comm.barrier();
  if (rank0) std::filesystem::remove_all(dir);
  return 0;
}
