// Before ddptrain opens an HDF5 file for reading, a separate process (ddptrain-h5probe, built
// beside ddptrain: src/h5probe/main.cpp) walks its structure as the readers will. libhdf5 itself
// crashes, or allocates without end, on some damaged files (tests/fuzz/hdf5_crashes): the probe
// takes that risk instead, under an address-space and a time limit, and ddptrain refuses such a
// file with one line (DataError, exit 3) instead of dying with a segmentation fault or being
// killed for memory.
#pragma once

#include <string>

namespace ddpt {

// Runs the probe on `path` and waits for it (milliseconds for a real file; at most 60 s, or
// DDPTRAIN_H5PROBE_SECONDS). Throws DataError if the probe crashed, ran out of memory or time, and
// InternalError if it cannot be started (missing beside the executable). A file that HDF5 refuses
// cleanly passes: the caller's own open reports it.
void probe_hdf5_file(const std::string& path);

}  // namespace ddpt
