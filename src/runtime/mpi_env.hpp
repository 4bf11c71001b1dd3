// RAII over MPI's lifetime. Initialises MPI with the thread level ddptrain needs and finalises it
// on destruction, unless MPI was already initialised by someone else (a test main), in which case
// it leaves both to the owner.
#pragma once

#include <mpi.h>

#include <string>

namespace ddpt {

class MpiEnv {
 public:
  // Three threads call MPI: the communication thread (gradient all-reduces), the main thread
  // (stop vote, checkpoints) and the watchdog, which must answer its peers and abort the job
  // while another thread is blocked inside a collective. That needs MPI_THREAD_MULTIPLE.
  static constexpr int kRequiredThreadLevel = MPI_THREAD_MULTIPLE;

  MpiEnv(int* argc, char*** argv);
  ~MpiEnv();
  MpiEnv(const MpiEnv&) = delete;
  MpiEnv& operator=(const MpiEnv&) = delete;

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  const std::string& host() const { return host_; }
  // "Open MPI v4.1.4, ..." as the library reports it.
  static std::string library_version();
  // Ends every rank of the job with `exit_code`. Does not return.
  [[noreturn]] void abort(int exit_code) const;

 private:
  bool owns_mpi_ = false;
  int world_rank_ = 0;
  int world_size_ = 1;
  std::string host_;
};

std::string thread_level_name(int level);

}  // namespace ddpt
