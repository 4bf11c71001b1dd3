#include "comm/host_group.hpp"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "runtime/gather_strings.hpp"
#include "util/check.hpp"
#include "util/error.hpp"

namespace ddpt {

HostGroup::HostGroup(MPI_Comm comm, Watchdog* watchdog)
    : HostGroup(comm, watchdog, FlightRecorder::kTrainingStream, Watchdog::Deadline::kHangRule) {}

HostGroup::HostGroup(MPI_Comm comm, Watchdog* watchdog, std::string stream,
                     Watchdog::Deadline deadline)
    : watchdog_(watchdog), stream_(std::move(stream)), deadline_(deadline) {
  DDPT_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  DDPT_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
}

HostGroup HostGroup::for_thread(std::string thread) const {
  return {comm_.get(), watchdog_, std::move(thread), Watchdog::Deadline::kTimeout};
}

Watchdog::Scope HostGroup::watch_next(std::string_view what) {
  ++agreements_;
  if (!watchdog_) return {};
  return watchdog_->watch(fmt::format("{} (agreement #{})", what, agreements_),
                          {std::string(what), 0, "", "MPI host group", stream_}, deadline_);
}

int64_t HostGroup::reduce(std::string_view what, int64_t mine, MPI_Op op) {
  const Watchdog::Scope watched = watch_next(what);
  int64_t agreed = mine;
  DDPT_CHECK_MPI(MPI_Allreduce(&mine, &agreed, 1, MPI_INT64_T, op, comm_.get()));
  return agreed;
}

int64_t HostGroup::min(std::string_view what, int64_t mine) {
  return reduce(what, mine, MPI_MIN);
}

int64_t HostGroup::max(std::string_view what, int64_t mine) {
  return reduce(what, mine, MPI_MAX);
}

bool HostGroup::all(std::string_view what, bool mine) {
  return reduce(what, mine ? 1 : 0, MPI_MIN) == 1;
}

std::string HostGroup::broadcast(std::string_view what, const std::string& mine, int root) {
  const Watchdog::Scope watched = watch_next(what);
  return broadcast_string(comm_.get(), mine, root);
}

std::vector<std::string> HostGroup::all_gather(std::string_view what, const std::string& mine,
                                               size_t max_length) {
  const Watchdog::Scope watched = watch_next(what);
  return all_gather_strings(comm_.get(), mine, max_length);
}

std::vector<double> HostGroup::all_gather(std::string_view what, const std::vector<double>& mine) {
  const Watchdog::Scope watched = watch_next(what);
  std::vector<double> all(mine.size() * static_cast<size_t>(size_));
  DDPT_CHECK_MPI(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                               static_cast<int>(mine.size()), MPI_DOUBLE, comm_.get()));
  return all;
}

std::vector<int64_t> HostGroup::gather(std::string_view what, const std::vector<int64_t>& mine,
                                       int root) {
  const Watchdog::Scope watched = watch_next(what);
  if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw Error(fmt::format("{}: {} values are more than one MPI message holds", what, mine.size()),
                ExitCode::kInternal, Raised::kThisRank);
  }
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(rank_ == root ? size_ : 0);
  DDPT_CHECK_MPI(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm_.get()));
  std::vector<int> displacements(counts.size());
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    displacements[r] = static_cast<int>(total);
    total += counts[r];
  }
  if (total > std::numeric_limits<int>::max()) {
    throw Error(fmt::format("{}: {} values are more than one MPI message holds", what, total),
                ExitCode::kInternal, Raised::kThisRank);
  }
  std::vector<int64_t> all(static_cast<size_t>(total));
  DDPT_CHECK_MPI(MPI_Gatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(),
                             displacements.data(), MPI_INT64_T, root, comm_.get()));
  return all;
}

void HostGroup::barrier(std::string_view what) {
  const Watchdog::Scope watched = watch_next(what);
  DDPT_CHECK_MPI(MPI_Barrier(comm_.get()));
}

}  // namespace ddpt
