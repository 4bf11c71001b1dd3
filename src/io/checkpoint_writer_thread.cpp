#include "io/checkpoint_writer_thread.hpp"

#include "io/checkpoint.hpp"
#include "util/check.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {

CheckpointWriterThread::CheckpointWriterThread(MPI_Comm comm) {
  DDPT_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
}

CheckpointWriterThread::~CheckpointWriterThread() {
  if (!thread_.joinable()) return;
  if (std::uncaught_exceptions() > 0) {
    thread_.detach();  // a collective whose peers are gone may never return
    comm_.release();
    return;
  }
  thread_.join();
}

void CheckpointWriterThread::start(const std::string& run_dir, int64_t step,
                                   std::shared_ptr<const StateSnapshot> snapshot,
                                   const CheckpointConfig& retention) {
  if (thread_.joinable()) {
    throw Error("CheckpointWriterThread: a write is still in flight", ExitCode::kInternal,
                Raised::kAllRanks);
  }
  result_ = {};
  error_ = nullptr;
  shared_.emplace();  // from here until the join, every HDF5 call of the process holds the lock
  thread_ = std::thread([this, run_dir, step, snapshot = std::move(snapshot), retention] {
    try {
      const Stopwatch write;
      snapshot->wait_for_copies();
      result_.path = write_checkpoint(run_dir, step, *snapshot, comm_.get(), retention);
      result_.write_s = write.seconds();
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

std::optional<CheckpointWritten> CheckpointWriterThread::wait() {
  if (!thread_.joinable()) return std::nullopt;
  thread_.join();
  shared_.reset();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return result_;
}

}  // namespace ddpt
