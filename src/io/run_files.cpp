#include "io/run_files.hpp"

#include "util/check.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

RunFiles::RunFiles(const Config& config, CheckpointContents contents, MPI_Comm comm)
    : config_(config), contents_(std::move(contents)), comm_(comm) {}

std::string RunFiles::checkpoint_to_resume() const {
  if (config_.train.resume == "none") return "";
  if (config_.train.resume == "auto") return latest_checkpoint(config_.run.dir);
  return config_.train.resume;
}

int64_t RunFiles::load(const std::string& path) {
  int rank = 0;
  int size = 1;
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_, &rank));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_, &size));
  return load_checkpoint(path, contents_, rank, size);
}

std::string RunFiles::metrics_path() const {
  return config_.run.dir + "/metrics.h5";
}

void RunFiles::open_metrics(const RunDescription& run, int64_t resume_step) {
  metrics_ = MetricsWriter::create_or_resume(metrics_path(), run, resume_step, config_.log.every);
}

void RunFiles::record(const StepRecord& record) {
  if (metrics_) metrics_->append(record);
}

void RunFiles::record_eval(int64_t step, const EvalResult& result) {
  if (metrics_) metrics_->append_eval(step, result);
}

CheckpointWritten RunFiles::checkpoint(int64_t step, int64_t epoch,
                                       std::optional<double> eval_loss) {
  const Stopwatch write;
  CheckpointWritten written;
  written.path = save_checkpoint(config_.run.dir, step, epoch, contents_, comm_, config_.checkpoint,
                                 eval_loss);
  written.write_s = write.seconds();
  return written;
}

}  // namespace ddpt
