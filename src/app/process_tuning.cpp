#include "app/process_tuning.hpp"

#include <malloc.h>

#include <cstdlib>

namespace ddpt {
namespace {
constexpr int kMmapThreshold = 32 << 20;  // glibc's largest allowed value on 64-bit
constexpr int kTrimThreshold = 1 << 30;
}  // namespace

void tune_process() {
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

}  // namespace ddpt
