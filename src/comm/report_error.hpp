// How a subcommand's error ends the job: an error every rank raises alike is printed by rank 0 and
// becomes the exit code; an error of this rank alone is printed with its rank and host and aborts
// the device communicators and then the MPI job, so that no peer waits in a collective.
#pragma once

#include <exception>

#include "runtime/mpi_env.hpp"

namespace ddpt {

// Returns the exit code (where the job was not aborted). `mpi`: null before MPI is up.
int report_error(const std::exception& error, MpiEnv* mpi);

}  // namespace ddpt
