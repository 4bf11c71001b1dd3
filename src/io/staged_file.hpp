// Every output file of ddptrain (checkpoints and their links, metrics.h5, predictions, make-data
// files) is written under a staging name beside its final one and renamed over it when complete:
// rename(2) within one directory is atomic, so a reader, or a job killed half-way, sees the old
// file or the new one, never half of one. The staging name is ".NAME.tmp" in the same directory
// (hidden, and on the same file system as the final name).
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

#include "comm/host_group.hpp"

namespace ddpt {

// Where the file that will become `final_path` is written.
std::filesystem::path staging_path(const std::filesystem::path& final_path);
// Renames staging_path(final_path) to `final_path`, replacing what was there.
void publish_staged(const std::filesystem::path& final_path);
// Writes what this process wrote of `path` from the page cache to the disk (fsync(2)): 0, or the
// errno of the failure (EIO, and ENOSPC or EDQUOT where a file system allocates late). Without it
// a file is renamed into place while its data may still be lost to a crash of the node.
int sync_to_disk(const std::filesystem::path& path) noexcept;
// One process's whole file: `write` fills the stream opened (binary) at the staging name, which is
// synced and renamed to `final_path`. DataError (exit 3, this rank) naming the file if a write or
// the sync fails; the staged file is then removed.
void write_staged_file(const std::filesystem::path& final_path,
                       const std::function<void(std::ostream&)>& write);
// Collective over `group`, the ranks that wrote the staged file of `final_path` (on a parallel file
// system each node holds its own part in its page cache): every rank syncs what it wrote to the
// disk, then rank 0 of `group` renames the file into place. If any rank's sync failed, nothing is
// published: the staged file is removed and every rank of `group` throws DataError (exit 3),
// "DESCRIPTION could not be written to the disk: REASON (free space); KEPT", KEPT saying what is
// left of the older output. The error is raised on every rank when `group` spans the job, else on
// this rank (a file rank 0 wrote alone).
void sync_and_publish(const std::filesystem::path& final_path, HostGroup& group,
                      const std::string& description, const std::string& kept);

}  // namespace ddpt
