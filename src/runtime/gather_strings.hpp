// Strings across ranks. Every rank's string, on every rank (MPI_Allgather of fixed-size, NUL-padded
// records): host names for the watchdog's reports, placement lines for `ddptrain info`. Not for hot
// paths.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <string>
#include <vector>

#include "util/check.hpp"

namespace ddpt {

// Collective over `comm`. Strings longer than `max_length` are cut.
inline std::vector<std::string> all_gather_strings(MPI_Comm comm, const std::string& mine,
                                                   size_t max_length = 255) {
  int size = 1;
  DDPT_CHECK_MPI(MPI_Comm_size(comm, &size));
  const size_t record = max_length + 1;  // room for the NUL
  std::vector<char> own(record, '\0');
  std::copy_n(mine.begin(), std::min(mine.size(), max_length), own.begin());
  std::vector<char> all(record * static_cast<size_t>(size));
  DDPT_CHECK_MPI(MPI_Allgather(own.data(), static_cast<int>(record), MPI_CHAR, all.data(),
                               static_cast<int>(record), MPI_CHAR, comm));
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + record * static_cast<size_t>(r));
  return out;
}

// Rank `root`'s string, on every rank. Collective over `comm`.
inline std::string broadcast_string(MPI_Comm comm, const std::string& mine, int root = 0) {
  int length = static_cast<int>(mine.size());
  DDPT_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  std::string out = mine;
  out.resize(static_cast<size_t>(length));
  DDPT_CHECK_MPI(MPI_Bcast(out.data(), length, MPI_CHAR, root, comm));
  return out;
}

}  // namespace ddpt
