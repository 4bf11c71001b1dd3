// One thread at a time in HDF5. Debian's parallel HDF5 is built without its thread-safety
// option (a global lock around every API call), so ddptrain keeps the rule itself: whenever two
// threads may use HDF5 (the training thread and the background checkpoint writer of
// checkpoint.async), each HDF5 operation holds this lock: the writer takes it around each object
// it writes (a dataset, an attribute, a group; file creation and closing), the training thread
// around each read of training data and each metrics row. The lock is recursive, so an operation
// may call helpers that lock again. Held per object, not per file: a training thread that reads a
// batch from an HDF5 data file waits at most for the one object being written.
//
// A writer thread's collective write (MPI-IO) holds the lock while it waits for the other ranks'
// writers; those can always proceed, since a training thread holds the lock only around
// independent operations that finish on their own (never around an MPI collective).
#pragma once

#include <mutex>

namespace ddpt {

std::recursive_mutex& hdf5_mutex();

// Holds hdf5_mutex() for its scope.
class Hdf5Lock {
 public:
  Hdf5Lock() : hold_(hdf5_mutex()) {}

 private:
  std::lock_guard<std::recursive_mutex> hold_;
};

}  // namespace ddpt
