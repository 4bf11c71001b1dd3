// Picks and builds the communication backend for a device.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/watchdog.hpp"
#include "config/choices.hpp"
#include "util/fault_injector.hpp"

namespace ddpt {

// The backend `backend` is on `device`: kAuto is NCCL for CUDA devices when compiled in, else
// MPI. The one place auto is decided (the communicator, the sharding plan, `info`).
Backend resolved_backend(Backend backend, torch::Device device);

// Collective over `comm`, with resolved_backend(backend, device). Throws ConfigError for a backend
// that cannot serve `device`. `watchdog` (may be null) watches every collective. `faults`: a test's
// (util/fault_injector.hpp), which the MPI backend asks.
std::unique_ptr<Communicator> make_communicator(Backend backend, torch::Device device,
                                                MPI_Comm comm, Watchdog* watchdog = nullptr,
                                                FaultInjector& faults = no_faults());

// Whether this build has the NCCL backend, and its version ("" if not).
bool nccl_compiled();
std::string nccl_version();

// Error path (report_error, the watchdog's timeout): aborts every device communicator of the
// process, so that peers inside a collective fail instead of hanging. Thread-safe; their owners
// see them aborted and issue no more collectives.
void abort_device_communicators() noexcept;

}  // namespace ddpt
