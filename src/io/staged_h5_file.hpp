// An HDF5 output file written under its staging name (io/staged_file.hpp) and closed on purpose,
// never by a destructor: the close writes what HDF5 still buffers, so a full disk or an exceeded
// quota may show only there, and a destructor would drop that failure and let the truncated file
// be published. Checkpoints, predictions, make-data files and flight records are written so.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "comm/host_group.hpp"
#include "h5/h5_file.hpp"

namespace ddpt {

// What a failed write names: DESCRIPTION ("checkpoint 'PATH'") and what is left of older outputs
// (KEPT: "the previous checkpoints are kept").
struct StagedOutput {
  std::string description;
  std::string kept = "an older file of that name is kept";
};

// Creates the staging file of `final_path` (collectively over `comm`; MPI_COMM_NULL: this process
// alone), lets `write` fill it and closes it. Publishing is the caller's (sync_and_publish).
// A failure on this rank (a full disk, a quota, an I/O error) abandons the file instead of closing
// it (a parallel close is collective and would wait for ranks that are elsewhere; nor can HDF5
// close a file whose writes failed), removes the staging file and throws DataError (exit 3) known
// to this rank only, so the job ends at once (comm/report_error.hpp): "DESCRIPTION could not be
// written (CAUSE; FREE SPACE; KEPT): WHAT". Any other exception abandons and removes the same way
// and goes on. Each HDF5 step here holds the HDF5 lock; `write` takes it as it needs
// (h5/h5_lock.hpp).
void write_staged_h5(const std::filesystem::path& final_path, MPI_Comm comm,
                     const StagedOutput& output, const std::function<void(H5File&)>& write);

// What a small output file's root attributes and dataset headers take: a few KiB, rounded up.
constexpr int64_t kStagedMetadataBytes = int64_t{64} << 10;

// Collective over `group`, before write_staged_h5: rank 0 checks that `bytes` of disk fit in the
// staging file of `final_path` by allocating them (io/disk_space.hpp), and every rank learns the
// outcome. A full disk or an exceeded quota is then one clean error on every rank, DataError
// (exit 3): "DESCRIPTION cannot be written: REASON (it needs about BYTES; FREE SPACE); nothing was
// written, KEPT", instead of a failure inside HDF5's collective writes, which ends the job
// through MPI_Abort or, if HDF5's ranks part ways inside its collective close, at the watchdog's
// deadline. The file is truncated when HDF5 creates it, so this checks the space at that moment;
// it does not hold it.
void check_staged_space(const std::filesystem::path& final_path, int64_t bytes, HostGroup& group,
                        const StagedOutput& output);

}  // namespace ddpt
