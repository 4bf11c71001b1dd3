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
//
// Besides, every checked HDF5 call (DDPT_CHECK_H5) and every H5Id release holds the lock for
// its own duration, as HDF5's thread-safe build would: so a thread that uses HDF5 rarely and
// outside this rule (the watchdog writing a flight file while the job hangs,
// comm/flight_recorder.hpp) takes Hdf5TryLock and is then alone in HDF5.
//
// The rule is checked: while an Hdf5SharedScope exists (a background write is in flight), every
// call made through DDPT_CHECK_H5 and every H5Id release must come from a thread that holds the
// lock, or the process aborts naming the call. A missed lock otherwise shows only as a rare
// corruption of HDF5's global state (HDF5 1.14: "no VOL object wrap context", then abort or hang).
#pragma once

#include <mutex>

namespace ddpt {

std::recursive_mutex& hdf5_mutex();

// Holds hdf5_mutex() for its scope.
class Hdf5Lock {
 public:
  Hdf5Lock();
  ~Hdf5Lock();
  Hdf5Lock(const Hdf5Lock&) = delete;
  Hdf5Lock& operator=(const Hdf5Lock&) = delete;
};

// Holds hdf5_mutex() for its scope if it could take it within `wait_s` seconds (owns() says
// whether it did): a thread that must not wait forever for a thread blocked in a collective HDF5
// write (MPI-IO) waiting for a stopped rank.
class Hdf5TryLock {
 public:
  explicit Hdf5TryLock(double wait_s);
  ~Hdf5TryLock();
  bool owns() const { return owns_; }
  Hdf5TryLock(const Hdf5TryLock&) = delete;
  Hdf5TryLock& operator=(const Hdf5TryLock&) = delete;

 private:
  bool owns_ = false;
};

// For its lifetime, a second thread uses HDF5: unlocked HDF5 calls are bugs (see above).
class Hdf5SharedScope {
 public:
  Hdf5SharedScope();
  ~Hdf5SharedScope();
  Hdf5SharedScope(const Hdf5SharedScope&) = delete;
  Hdf5SharedScope& operator=(const Hdf5SharedScope&) = delete;
};

// Aborts with a message naming `call` if HDF5 is shared and this thread does not hold the lock.
void expect_hdf5_lock(const char* call) noexcept;

}  // namespace ddpt
