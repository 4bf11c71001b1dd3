// `ddptrain inspect FILE`: what a metrics, checkpoint or predictions file holds, in words. Every
// dataset of a checkpoint or predictions file is read, so its checksum is verified.
#pragma once

#include <ostream>
#include <string>

namespace ddpt {

// DataError (exit 3) naming the file if it is not HDF5, damaged, or none of the three.
void inspect_file(const std::string& path, std::ostream& out);

}  // namespace ddpt
