// Agreements among ranks on the host: the few values and strings every rank must see alike
// outside the gradients (the smallest memory a rank has, whether a batch size fitted on every
// rank, rank 0's verdict on run.dir, whether every rank's file reached the disk, every rank's step
// times for the summary). Each is one MPI collective on a communicator of the group's own, watched
// by the watchdog under a name that says what is agreed on: a rank that never arrives ends the job
// with exit code 5 and a report naming it, as a stopped rank does in training, instead of leaving
// the others waiting until the wall-clock limit. Code outside comm/ and runtime/ agrees through
// this class only (tests/lint/source_rules.py).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/watchdog.hpp"
#include "runtime/mpi_comm_handle.hpp"

namespace ddpt {

class HostGroup {
 public:
  // Collective over `comm` (MPI_Comm_dup). `watchdog` may be null: then nothing is watched (tools
  // without a deck, and phases an outer scope already watches). Its agreements belong to the
  // training thread: in its flight records' sequence, under the hang rule's deadline.
  HostGroup(MPI_Comm comm, Watchdog* watchdog);

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The group's own communicator, for libraries that take one (parallel HDF5). Collectives on it
  // are the caller's to watch.
  MPI_Comm comm() const { return comm_.get(); }
  // Watches work whose collectives the watchdog cannot see (parallel HDF5 on comm()) as a phase
  // with the deadline dist.timeout_s (Watchdog::phase); nothing without a watchdog.
  [[nodiscard]] Watchdog::Scope phase(std::string what) const {
    return watch_phase(watchdog_, std::move(what));
  }
  // Collective: the same ranks on a communicator of their own (MPI_Comm_dup), watched by the same
  // watchdog, for another thread (`thread` names it: "checkpoint writer"), whose collectives must
  // never interleave with this group's. They are numbered apart in the flight records (their
  // order against the training thread's differs from rank to rank), and each waits up to
  // dist.timeout_s: that thread does not keep training's pace, so the hang rule's deadline does
  // not apply (its question to silent ranks does).
  HostGroup for_thread(std::string thread) const;

  // Each call below is a collective over the group; `what` names it in the watchdog's report
  // ("run.dir check", "batch size 64 fits"), and must be the same text on every rank.
  int64_t min(std::string_view what, int64_t mine);
  int64_t max(std::string_view what, int64_t mine);
  // True when `mine` is true on every rank.
  bool all(std::string_view what, bool mine);
  // Rank `root`'s string, on every rank.
  std::string broadcast(std::string_view what, const std::string& mine, int root = 0);
  // Every rank's string, by rank; strings longer than `max_length` are cut.
  std::vector<std::string> all_gather(std::string_view what, const std::string& mine,
                                      size_t max_length = 255);
  // Every rank's values, by rank, one after another; every rank passes the same count.
  std::vector<double> all_gather(std::string_view what, const std::vector<double>& mine);
  // to_each[r] to rank r, from every rank: what every rank sent to this one, rank 0's first (one
  // MPI_Alltoallv); each rank receives fewer than 2^31 values in all.
  std::vector<int64_t> exchange(std::string_view what,
                                const std::vector<std::vector<int64_t>>& to_each);
  void barrier(std::string_view what);

 private:
  HostGroup(MPI_Comm comm, Watchdog* watchdog, std::string stream, Watchdog::Deadline deadline);
  // Watches the collective about to start; the sequence number makes its name unique.
  Watchdog::Scope watch_next(std::string_view what);
  int64_t reduce(std::string_view what, int64_t mine, MPI_Op op);

  MpiCommHandle comm_;
  int rank_ = 0;
  int size_ = 1;
  Watchdog* watchdog_;
  std::string stream_;  // the flight records' sequence its agreements are numbered in
  Watchdog::Deadline deadline_;
  int64_t agreements_ = 0;
};

}  // namespace ddpt
