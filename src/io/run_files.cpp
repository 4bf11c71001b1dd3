#include "io/run_files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "h5/h5_lock.hpp"
#include "io/disk_space.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/stopwatch.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

// Rank 0 makes run.dir and writes config.cfg into it and opens log.txt: "" if that worked, else
// what failed.
std::string write_run_dir(const RunFilesOptions& options) {
  const std::filesystem::path dir(options.dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "run.dir '" + options.dir + "' cannot be created: " + ec.message();
  errno = 0;
  std::ofstream deck(dir / "config.cfg");
  deck << "# resolved by ddptrain " << ddptrain_version() << " from "
       << (options.deck_path.empty() ? "defaults" : options.deck_path) << "\n"
       << options.resolved_text;
  deck.close();
  if (!deck) {
    return fmt::format("run.dir '{}' is not writable: cannot write config.cfg there ({})",
                       options.dir, errno != 0 ? std::strerror(errno) : "write failed");
  }
  try {
    add_log_file((dir / "log.txt").string());
  } catch (const std::exception& e) {
    return fmt::format("run.dir '{}' is not writable: cannot open log.txt there ({})", options.dir,
                       e.what());
  }
  return "";
}

}  // namespace

RunFiles::RunFiles(const RunFilesOptions& options, CheckpointContents contents, HostGroup& group)
    : options_(options), contents_(std::move(contents)), group_(group) {
  if (options_.async_checkpoints) writer_ = std::make_unique<CheckpointWriterThread>(group_);
}

void RunFiles::open(const MetricsHeader& header, int64_t resume_step) {
  const std::string problem = group_.broadcast(
      "run.dir check", group_.rank() == 0 ? write_run_dir(options_) : std::string());
  if (!problem.empty()) throw ConfigError(problem);
  if (group_.rank() != 0) return;
  metrics_ =
      MetricsWriter::create_or_resume(metrics_path(), header, resume_step, options_.log_every);
}

std::string RunFiles::checkpoint_to_resume() const {
  if (options_.resume == "none") return "";
  if (options_.resume == "auto") return latest_checkpoint(options_.dir);
  return options_.resume;
}

int64_t RunFiles::load(const std::string& path) {
  return load_checkpoint(path, contents_, group_.rank(), group_.size());
}

std::string RunFiles::metrics_path() const {
  return options_.dir + "/metrics.h5";
}

namespace {

// metrics.h5 is rank 0's alone: a write that fails (a full disk, an exceeded quota) is this
// rank's error, and the job aborts; the message names the file and the space left.
Error metrics_write_failed(const std::string& path, const Error& error) {
  return DataError(fmt::format("metrics file '{}' could not be written ({}): {}", path,
                               free_space_text(path), error.what()),
                   Raised::kThisRank);
}

}  // namespace

void RunFiles::record(const StepRecord& record) {
  const Hdf5Lock lock;  // a checkpoint may be being written in the background
  try {
    if (metrics_) metrics_->append(record);
  } catch (const Error& e) {
    throw metrics_write_failed(metrics_path(), e);
  }
}

void RunFiles::record_eval(int64_t step, const EvalResult& result) {
  const Hdf5Lock lock;
  try {
    if (metrics_) metrics_->append_eval(step, result);
  } catch (const Error& e) {
    throw metrics_write_failed(metrics_path(), e);
  }
}

CheckpointWritten RunFiles::checkpoint(int64_t step, int64_t epoch,
                                       std::optional<double> eval_loss) {
  CheckpointWritten written;
  if (writer_) {
    writer_->wait();  // normally done already: TrainingRun waits before each checkpoint
    // The state as it is now, copied to host memory (into the last snapshot's buffers); the
    // writer thread takes it from here.
    std::vector<torch::Tensor> host_memory;
    if (last_snapshot_) {
      host_memory = last_snapshot_->release_host_memory();
    } else if (first_host_memory_.valid()) {
      host_memory = first_host_memory_.get();  // normally allocated long ago
    }
    auto snapshot =
        std::make_shared<StateSnapshot>(group_.rank(), /*copy=*/true, std::move(host_memory));
    save_state(*snapshot, step, epoch, contents_, group_.size(), eval_loss);
    last_snapshot_ = snapshot;
    writer_->start(options_.dir, step, std::move(snapshot), options_.retention);
    written.path = (checkpoints_dir(options_.dir) / checkpoint_file_name(step)).string();
    written.in_background = true;
    return written;
  }
  const Stopwatch write;
  written.path =
      save_checkpoint(options_.dir, step, epoch, contents_, group_, options_.retention, eval_loss);
  written.write_s = write.seconds();
  return written;
}

void RunFiles::prepare_checkpoint_memory() {
  if (!writer_ || last_snapshot_ || first_host_memory_.valid()) return;
  StateSnapshot layout(group_.rank(),
                       /*copy=*/false);  // references the tensors: only shapes are read
  save_state(layout, 0, 0, contents_, group_.size(), std::nullopt);
  first_host_memory_ =
      std::async(std::launch::async, allocate_host_memory, layout.host_memory_layout());
}

std::optional<CheckpointWritten> RunFiles::wait_for_checkpoint() {
  return writer_ ? writer_->wait() : std::nullopt;
}

}  // namespace ddpt
