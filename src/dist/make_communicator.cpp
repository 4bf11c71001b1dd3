#include "dist/make_communicator.hpp"

#include "dist/mpi_comm.hpp"
#include "util/error.hpp"

#ifdef DDPTRAIN_HAVE_NCCL
#include "dist/nccl_bootstrap.hpp"
#include "dist/nccl_comm.hpp"
#endif

namespace ddpt {

std::unique_ptr<Communicator> make_communicator(const std::string& backend, torch::Device device,
                                                MPI_Comm comm, Watchdog* watchdog) {
  const bool want_nccl =
      backend == "nccl" || (backend == "auto" && device.is_cuda() && nccl_compiled());
  if (!want_nccl) {
    if (device.is_cuda()) {
      throw ConfigError("ddp.backend = " + backend +
                        ": the MPI backend reduces host tensors; use nccl on GPUs");
    }
    return std::make_unique<MpiComm>(comm, watchdog);
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
  NcclComm::abort_all();
#endif
}

}  // namespace ddpt
