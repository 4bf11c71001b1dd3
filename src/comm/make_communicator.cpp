#include "comm/make_communicator.hpp"

#include "comm/mpi_comm.hpp"
#include "util/error.hpp"

#ifdef DDPTRAIN_HAVE_NCCL
#include "comm/nccl_bootstrap.hpp"
#include "comm/nccl_comm.hpp"
#include "comm/nccl_handle.hpp"
#endif

namespace ddpt {

Backend resolved_backend(Backend backend, torch::Device device) {
  if (backend != Backend::kAuto) return backend;
  return device.is_cuda() && nccl_compiled() ? Backend::kNccl : Backend::kMpi;
}

std::unique_ptr<Communicator> make_communicator(Backend backend, torch::Device device,
                                                MPI_Comm comm, Watchdog* watchdog,
                                                FaultInjector& faults) {
  if (resolved_backend(backend, device) == Backend::kMpi) {
    if (device.is_cuda()) {
      throw ConfigError(std::string("ddp.backend = ") + choice_name(backend) +
                        ": the MPI backend reduces host tensors; use nccl on GPUs");
    }
    return std::make_unique<MpiComm>(comm, watchdog, faults);
  }
  if (!device.is_cuda()) {
    throw ConfigError("ddp.backend = nccl needs a GPU, but this rank runs on the CPU");
  }
#ifdef DDPTRAIN_HAVE_NCCL
  return std::make_unique<NcclComm>(comm, device.index(), watchdog);
#else
  throw ConfigError("ddp.backend = nccl: this ddptrain was built without NCCL");
#endif
}

bool nccl_compiled() {
#ifdef DDPTRAIN_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::string nccl_version() {
#ifdef DDPTRAIN_HAVE_NCCL
  return nccl_version_string();
#else
  return "";
#endif
}

void abort_device_communicators() noexcept {
#ifdef DDPTRAIN_HAVE_NCCL
  NcclHandle::abort_all();  // every NCCL communicator of the process, whoever owns it
#endif
}

}  // namespace ddpt
