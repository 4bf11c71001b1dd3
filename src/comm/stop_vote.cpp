#include "comm/stop_vote.hpp"

#include "util/check.hpp"

namespace ddpt {

StopVote::StopVote(MPI_Comm comm, Watchdog* watchdog) : watchdog_(watchdog) {
  DDPT_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  DDPT_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  DDPT_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
}

int StopVote::agree(int local_signal) {
  if (size_ == 1) return local_signal;
  ++votes_;
  const Watchdog::Scope watched = watch(watchdog_, "stop vote #" + std::to_string(votes_),
                                        {"stop vote", sizeof(int), "Int", "MPI host group"});
  int agreed = 0;
  DDPT_CHECK_MPI(MPI_Allreduce(&local_signal, &agreed, 1, MPI_INT, MPI_MAX, comm_.get()));
  return agreed;
}

}  // namespace ddpt
