// RAII over an NCCL communicator (ncclComm_t), with the end-of-life policy of PyTorch c10d's
// NCCLComm. Move-only; the destructor never throws.
//
// Two ways to end a communicator: ncclCommDestroy frees it once the work queued on it is done,
// so it blocks for as long as a collective in flight waits for a peer (forever if the peer is
// gone); ncclCommAbort frees it and cancels what still runs on the device, without waiting. The
// destructor destroys, except when the handle was aborted (nothing is left to free) or when it
// runs during stack unwinding (an exception leaves the scope that made the handle, so a peer may
// be inside a collective with this rank): then it aborts.
//
// abort() may come from another thread (the watchdog's, or the error path through abort_all())
// while the owner still uses the handle. It only marks the handle aborted: get() keeps returning
// the same pointer, so reading it is never a data race. An owner checks aborted() before it
// passes get() to NCCL, and never passes it once aborted() is true. async_error() is the one
// call another thread makes on a live handle.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

namespace ddpt {

class NcclHandle {
 public:
  NcclHandle() = default;  // owns nothing
  // ncclCommInitRank: collective over the `nranks` ranks that hold `id`. Throws NcclError.
  NcclHandle(int nranks, const ncclUniqueId& id, int rank);
  ~NcclHandle();  // ncclCommDestroy, or ncclCommAbort (see above)
  NcclHandle(NcclHandle&& other) noexcept;
  NcclHandle& operator=(NcclHandle&&) = delete;
  NcclHandle(const NcclHandle&) = delete;
  NcclHandle& operator=(const NcclHandle&) = delete;

  // The communicator, for NCCL calls; check aborted() first. Null for an empty handle.
  ncclComm_t get() const noexcept;
  bool aborted() const noexcept;
  // Whether the destructor, run now, would abort rather than destroy: aborted already, or stack
  // unwinding since construction. Owners skip their own waits on the device then.
  bool ends_by_abort() const noexcept;

  // ncclCommAbort, so that peers blocked in a collective with this rank fail instead of hanging.
  // Idempotent and thread-safe.
  void abort() noexcept;

  // NCCL's asynchronous error (ncclCommGetAsyncError), as text with NCCL's last message; "" while
  // the communicator is healthy, empty or aborted. For another thread (the watchdog's) while the
  // owner uses the handle: it runs under the lock that abort() and abort_all() take, so it never
  // reads a communicator that an abort is freeing.
  std::string async_error() const;

  // Aborts every live handle of this process. The process-wide abort of the fatal-error paths
  // (report_error and the watchdog's timeout, through abort_device_communicators()): the only
  // reason handles register themselves, from construction to destruction.
  static void abort_all() noexcept;

  struct State;  // opaque (nccl_handle.cpp): the communicator and its aborted flag

 private:
  // On the heap: the registry of live handles holds its address, which stays put across moves.
  std::unique_ptr<State> state_;
  int uncaught_at_construction_ = 0;  // std::uncaught_exceptions() then
};

}  // namespace ddpt
