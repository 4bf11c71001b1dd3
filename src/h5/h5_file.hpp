// HDF5 files: created collectively (MPI-IO), alone, or for single-writer/multiple-reader access;
// opened for reading.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "h5/h5_dataset.hpp"  // what a node's methods return, complete for every user of a file
#include "h5/h5_group.hpp"
#include "h5/h5_id.hpp"
#include "h5/h5_node.hpp"  // a file is its root group
#include "h5/h5_series.hpp"

namespace ddpt {

// Whether this process left a file open after its writes failed (H5File::abandon, or a close that
// failed). HDF5 closes such files in its clean-up, which runs inside MPI_Finalize, and crashed on
// them (SIGSEGV in H5F__close_cb): such a process must end without MPI_Finalize (src/main.cpp).
bool hdf5_files_abandoned() noexcept;

// Whether `path` is an HDF5 file, by the signature HDF5 writes at its start (as ddptrain's
// checkpoints have it; a file with a user block before it is not recognised): false for a
// directory, a missing file or another format (safetensors).
bool is_hdf5_file(const std::string& path);

class H5File : public H5Node {
 public:
  // Creates (truncates) `path`. With `comm` set, the file uses the MPI-IO driver and the call is
  // collective over `comm`; MPI_COMM_NULL opens it from this process alone.
  static H5File create(const std::string& path, MPI_Comm comm = MPI_COMM_NULL);
  // Creates (truncates) `path` from this process alone in the newest file format, ready for
  // start_swmr_write(): a file that others read while it grows (metrics.h5).
  static H5File create_for_swmr(const std::string& path);
  // Opens `path` read-only from this process alone; DataError (exit 3) naming the file if it is
  // missing or not HDF5. A file that a writer holds in SWMR mode (a running job's metrics.h5, or
  // one whose job was killed) is opened as a single-writer/multiple-reader reader.
  static H5File open_read(const std::string& path);

  const std::string& path() const { return path_; }
  // Writes buffered data to the file, so that a reader (or a killed job) sees it.
  void flush();
  // From now on readers may open the file while this process appends to existing datasets; no
  // new objects or attributes can be created.
  void start_swmr_write();
  // Closes the file now and reports a failure, which a close can have: it writes what HDF5 still
  // buffers (on a full disk, that fails). Collective for a file created with a communicator.
  void close();
  // Leaves the file open, forever: after a failed collective write, closing it (collective) would
  // wait for ranks that are elsewhere; the job is about to abort.
  void abandon() noexcept;

 private:
  H5File(H5Id file, std::string path) : H5Node(std::move(file)), path_(std::move(path)) {}
  std::string path_;
};

}  // namespace ddpt
