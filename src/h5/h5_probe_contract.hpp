// What ddptrain (h5/h5_probe.cpp) and ddptrain-h5probe (h5probe/main.cpp) agree on; constants
// only, since the probe links HDF5 alone.
#pragma once

#include <cstdint>

namespace ddpt::probe {

// Address space the probe's walk may take: a real file's metadata needs far less.
constexpr uint64_t kAddressSpaceBytes = uint64_t{4} << 30;
constexpr const char* kAddressSpaceText = "4 GiB";
// The probe's exit status when HDF5 failed to allocate memory under that limit.
constexpr int kNeedsTooMuchMemory = 4;
// Metadata reads a SWMR reader makes before it gives up on a checksum (see h5_file.cpp).
constexpr unsigned kSwmrReadAttempts = 20;

}  // namespace ddpt::probe
