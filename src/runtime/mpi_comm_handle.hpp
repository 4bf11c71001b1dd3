// RAII owner of an MPI communicator handle (one made by dup/split), freed on destruction.
#pragma once

#include <mpi.h>

#include <utility>

namespace ddpt {

class MpiCommHandle {
 public:
  MpiCommHandle() = default;
  explicit MpiCommHandle(MPI_Comm comm) : comm_(comm) {}
  ~MpiCommHandle() { reset(); }
  MpiCommHandle(MpiCommHandle&& other) noexcept
      : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  MpiCommHandle& operator=(MpiCommHandle&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    }
    return *this;
  }
  MpiCommHandle(const MpiCommHandle&) = delete;
  MpiCommHandle& operator=(const MpiCommHandle&) = delete;

  MPI_Comm get() const { return comm_; }
  // Gives up ownership without freeing (the error path, where freeing could block).
  void release() { comm_ = MPI_COMM_NULL; }
  MPI_Comm* out() {
    reset();
    return &comm_;
  }  // for MPI calls that create a communicator

 private:
  void reset() noexcept {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace ddpt
