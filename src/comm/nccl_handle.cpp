#include "comm/nccl_handle.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <set>

#include "runtime/cuda_check.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"
#include "util/versions.hpp"

namespace ddpt {

struct NcclHandle::State {
  ncclComm_t comm = nullptr;  // set once, before the handle registers; never changed after
  std::atomic<bool> aborted{false};
};

namespace {

// The live handles, for abort_all(). Its mutex is held for the whole of abort_all(), so a handle
// being destroyed meanwhile waits to unregister until its abort (if any) has returned.
struct Registry {
  std::mutex mutex;
  std::set<NcclHandle::State*> live;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

// ncclCommAbort once per communicator, whichever thread gets here first.
void abort_state(NcclHandle::State& state) noexcept {
  if (state.aborted.exchange(true)) return;
  ncclCommAbort(state.comm);  // the error path: nothing more to do if it fails
}

}  // namespace

NcclHandle::NcclHandle(int nranks, const ncclUniqueId& id, int rank)
    : state_(std::make_unique<State>()), uncaught_at_construction_(std::uncaught_exceptions()) {
  DDPT_CHECK_NCCL(ncclCommInitRank(&state_->comm, nranks, id, rank));
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().live.insert(state_.get());
}

NcclHandle::NcclHandle(NcclHandle&& other) noexcept
    : state_(std::move(other.state_)), uncaught_at_construction_(other.uncaught_at_construction_) {}

NcclHandle::~NcclHandle() {
  if (!state_) return;
  const bool unwinding = std::uncaught_exceptions() > uncaught_at_construction_;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().live.erase(state_.get());
  }
  // Unregistered: no other thread aborts it from here on.
  if (state_->aborted.load()) return;
  if (unwinding) {
    ncclCommAbort(state_->comm);
    return;
  }
  if (ncclCommDestroy(state_->comm) != ncclSuccess) {
    write_stderr_line(process_tag() + " warning: NCCL communicator did not shut down cleanly");
  }
}

ncclComm_t NcclHandle::get() const noexcept {
  return state_ ? state_->comm : nullptr;
}

bool NcclHandle::aborted() const noexcept {
  return state_ && state_->aborted.load();
}

bool NcclHandle::ends_by_abort() const noexcept {
  return state_ &&
         (state_->aborted.load() || std::uncaught_exceptions() > uncaught_at_construction_);
}

void NcclHandle::abort() noexcept {
  if (!state_) return;
  std::lock_guard<std::mutex> lock(registry().mutex);  // not while async_error() reads it
  abort_state(*state_);
}

std::string NcclHandle::async_error() const {
  std::lock_guard<std::mutex> lock(registry().mutex);
  if (!state_ || state_->aborted.load()) return {};
  ncclResult_t status = ncclSuccess;
  if (ncclCommGetAsyncError(state_->comm, &status) != ncclSuccess) return {};
  if (status == ncclSuccess) return {};
  std::string text = ncclGetErrorString(status);
#if DDPTRAIN_NCCL_HAS_LAST_ERROR
  const char* last = ncclGetLastError(state_->comm);
  if (last != nullptr && *last != '\0') text += std::string(": ") + last;
#endif
  return text;
}

void NcclHandle::abort_all() noexcept {
  std::lock_guard<std::mutex> lock(registry().mutex);
  for (State* state : registry().live) abort_state(*state);
}

}  // namespace ddpt
