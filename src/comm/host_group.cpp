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

std::vector<int64_t> HostGroup::exchange(std::string_view what,
                                         const std::vector<std::vector<int64_t>>& to_each) {
  const Watchdog::Scope watched = watch_next(what);
  if (to_each.size() != static_cast<size_t>(size_)) {
    throw Error(fmt::format("{}: {} vectors for {} ranks", what, to_each.size(), size_),
                ExitCode::kInternal, Raised::kThisRank);
  }
  // Counts as MPI takes them, and their displacements; refused (on this rank) past what an int
  // counts.
  struct Layout {
    std::vector<int> counts, displacements;
    int total = 0;
  };
  const auto layout_of = [&](const std::vector<int64_t>& sizes) {
    Layout layout;
    int64_t total = 0;
    for (const int64_t size : sizes) {
      layout.displacements.push_back(static_cast<int>(total));
      layout.counts.push_back(static_cast<int>(size));
      total += size;
      if (total > std::numeric_limits<int>::max()) {
        throw Error(fmt::format("{}: more values than one MPI message holds", what),
                    ExitCode::kInternal, Raised::kThisRank);
      }
    }
    layout.total = static_cast<int>(total);
    return layout;
  };
  std::vector<int64_t> send_sizes;
  std::vector<int64_t> sent;
  for (const std::vector<int64_t>& values : to_each) {
    send_sizes.push_back(static_cast<int64_t>(values.size()));
    sent.insert(sent.end(), values.begin(), values.end());
  }
  const Layout send = layout_of(send_sizes);
  std::vector<int> receive_counts(to_each.size());
  DDPT_CHECK_MPI(
      MPI_Alltoall(send.counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, comm_.get()));
  const Layout receive =
      layout_of(std::vector<int64_t>(receive_counts.begin(), receive_counts.end()));
  std::vector<int64_t> received(static_cast<size_t>(receive.total));
  DDPT_CHECK_MPI(MPI_Alltoallv(sent.data(), send.counts.data(), send.displacements.data(),
                               MPI_INT64_T, received.data(), receive.counts.data(),
                               receive.displacements.data(), MPI_INT64_T, comm_.get()));
  return received;
}

void HostGroup::barrier(std::string_view what) {
  const Watchdog::Scope watched = watch_next(what);
  DDPT_CHECK_MPI(MPI_Barrier(comm_.get()));
}

}  // namespace ddpt
