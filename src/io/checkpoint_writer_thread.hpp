// checkpoint.async: the thread that writes checkpoints while training goes on.
//
// The training thread makes a snapshot of the state in host memory at the step boundary
// (io/state_snapshot.hpp) and hands it over; this thread writes the file, renames it, moves
// checkpoints/latest and prunes, exactly as a synchronous write does, on its own duplicate of the
// communicator (so its collectives never interleave with the training thread's). At most one
// write is in flight: the next checkpoint, a stop and the end of the run wait for it. A process
// killed during the write leaves the staging file behind and latest on the previous checkpoint.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "comm/host_group.hpp"
#include "h5/h5_lock.hpp"
#include "io/checkpoint.hpp"
#include "io/state_snapshot.hpp"
#include "run/training_run.hpp"

namespace ddpt {

class CheckpointWriterThread {
 public:
  // Collective over `group` (HostGroup::duplicate).
  explicit CheckpointWriterThread(const HostGroup& group);
  // Waits for the write in flight; when unwinding from an error, does not (its peers may never
  // arrive) and leaves the process to MPI_Abort.
  ~CheckpointWriterThread();
  CheckpointWriterThread(const CheckpointWriterThread&) = delete;
  CheckpointWriterThread& operator=(const CheckpointWriterThread&) = delete;

  // Starts writing `snapshot` as the checkpoint of `step`; returns at once. Call wait() first:
  // one write at a time.
  void start(const std::string& run_dir, int64_t step,
             std::shared_ptr<const StateSnapshot> snapshot, const Retention& retention);
  // Waits for the write in flight and returns what it wrote (nullopt if none was in flight);
  // rethrows its error on this thread. A write that failed on one rank of several does not wait
  // for this: the writer thread reports it and aborts the job at once (see the .cpp).
  std::optional<CheckpointWritten> wait();

 private:
  std::unique_ptr<HostGroup> group_;       // the writer's own
  std::optional<Hdf5SharedScope> shared_;  // while a write is in flight
  std::thread thread_;
  CheckpointWritten result_;  // written by the thread, read after join
  std::exception_ptr error_;  // likewise
};

}  // namespace ddpt
