// Picks and builds the communication backend for a device.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "dist/communicator.hpp"
#include "dist/watchdog.hpp"

namespace ddpt {

// Collective over `comm`. backend: "auto" (NCCL for CUDA devices when compiled in, else MPI),
// "mpi" or "nccl". Throws ConfigError for a backend that cannot serve `device`. `watchdog` (may
// be null) watches every collective.
std::unique_ptr<Communicator> make_communicator(const std::string& backend, torch::Device device,
                                                MPI_Comm comm, Watchdog* watchdog = nullptr);

// Whether this build has the NCCL backend, and its version ("" if not).
bool nccl_compiled();
std::string nccl_version();

// Error path: aborts device communicators so peers inside a collective fail instead of hanging.
void abort_device_communicators() noexcept;

}  // namespace ddpt
