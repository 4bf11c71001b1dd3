// Room on the disk for run outputs. A checkpoint that cannot fit (a full file system, an exceeded
// quota) must end the job with one clear line, not fail inside HDF5's collective writes, where
// the ranks whose part succeeded wait forever for the one whose part failed: so its bytes are
// allocated once before the write starts (check_space), and the outcome is shared by every rank.
// This is a check, not a reservation: HDF5 truncates the file when it creates it, which hands the
// space back, so a disk that fills during the write still fails it (staged_h5_file.hpp ends that
// cleanly too). Keeping the space would need the allocation after HDF5's create, and its surplus
// freed after HDF5's close, which file systems do differently past the end of a file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ddpt {

// Bytes an unprivileged writer may still use on the file system holding `path` (statvfs
// f_bavail); -1 if unknown.
int64_t free_bytes(const std::filesystem::path& path);
// "1.2 MiB free on its file system", for messages about writes under `path`.
std::string free_space_text(const std::filesystem::path& path);

// Whether `bytes` fit: creates `path` and allocates `bytes` of disk to it (posix_fallocate), so
// that a full file system or an exceeded quota shows now: returns 0, or the errno (ENOSPC,
// EDQUOT, ...). Where the file system cannot preallocate, compares `bytes` with free_bytes
// instead (ENOSPC if short). The file is left in place (the caller writes over it, which frees
// the allocation, or removes it).
int check_space(const std::filesystem::path& path, int64_t bytes);

}  // namespace ddpt
