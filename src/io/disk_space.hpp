// Room on the disk for run outputs. A checkpoint that cannot fit (a full file system, an exceeded
// quota) must end the job with one clear line, not fail inside HDF5's collective writes, where
// the ranks whose part succeeded wait forever for the one whose part failed: so its bytes are
// taken before the write starts (reserve_space), and the outcome is shared by every rank.
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

// Creates `path` and allocates `bytes` of disk to it (posix_fallocate), so that a full file
// system or an exceeded quota shows now: returns 0, or the errno (ENOSPC, EDQUOT, ...). Where the
// file system cannot preallocate, compares `bytes` with free_bytes instead (ENOSPC if short). The
// file is left in place (the caller writes over it or removes it).
int reserve_space(const std::filesystem::path& path, int64_t bytes);

}  // namespace ddpt
