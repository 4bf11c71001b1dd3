#include "io/checkpoint_writer_thread.hpp"

#include <cstdlib>

#include "comm/make_communicator.hpp"
#include "io/checkpoint.hpp"
#include "util/check.hpp"
#include "util/error_text.hpp"
#include "util/stopwatch.hpp"

namespace ddpt {
namespace {

// A write that failed on one rank of several ends the job here and now, as a rank-local error on
// the training thread does (comm/report_error.cpp): one error line, then MPI_Abort. Left for
// wait() to rethrow at the next checkpoint, it never got there: the other ranks' writers stay
// inside a collective this rank's writer has left (seen: MPI_File_set_view's all-reduce under
// H5Dcreate, after rank 0's write failed with EDQUOT), holding the HDF5 lock their training
// threads wait for at the next metrics row, while this rank's training thread waits for them in
// the next gradient all-reduce. Every rank then sat until dist.timeout_s and ended with exit 5.
[[noreturn]] void end_job(const std::exception& error) {
  print_rank_error(error);
  abort_device_communicators();
  MPI_Abort(MPI_COMM_WORLD, exit_code_of(error));
  std::_Exit(exit_code_of(error));
}

}  // namespace

CheckpointWriterThread::CheckpointWriterThread(const HostGroup& group)
    : group_(std::make_unique<HostGroup>(group.for_thread("checkpoint writer"))) {}

CheckpointWriterThread::~CheckpointWriterThread() {
  if (!thread_.joinable()) return;
  if (std::uncaught_exceptions() > 0) {
    thread_.detach();        // a collective whose peers are gone may never return
    (void)group_.release();  // never freed: freeing its communicator could block as well
    return;
  }
  thread_.join();
}

void CheckpointWriterThread::start(const std::string& run_dir, int64_t step,
                                   std::shared_ptr<const StateSnapshot> snapshot,
                                   const Retention& retention) {
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
      result_.path = write_checkpoint(run_dir, step, *snapshot, *group_, retention);
      result_.write_s = write.seconds();
    } catch (const std::exception& e) {
      // Raised on every rank alike (no space for it: all ranks learn it together), or with
      // one rank only: no peer can be left inside a collective, so wait() rethrows it on the
      // training thread, which reports it as any error.
      const auto* typed = dynamic_cast<const Error*>(&e);
      if (group_->size() > 1 && !(typed && typed->collective())) end_job(e);
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
