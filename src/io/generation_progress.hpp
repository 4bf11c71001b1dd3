// The rows a `ddptrain generate` job has finished, kept beside its output (OUT.h5.partial/) until
// the output is written, so that a job stopped by SIGUSR1/SIGTERM (exit 75) or killed continues
// where it was: the same command generates only the rows that are not there. Each rank appends
// each finished batch to a file of its own and syncs it to the disk, so a rank killed with
// SIGKILL loses at most the batch in flight; a record cut short by the kill is ignored. The rows
// are the same whichever rank made them (generate/generation.hpp), so an attempt may run on
// another rank count. The folder also holds the settings that chose the tokens: an attempt with
// other settings starts afresh.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "comm/host_group.hpp"
#include "generate/generation.hpp"

namespace ddpt {

class GenerationProgress {
 public:
  // Collective over `group`: rank 0 keeps OUT.h5.partial/ if its settings are `settings`, else
  // makes it afresh; then every rank reads the rows every earlier attempt finished.
  GenerationProgress(const std::filesystem::path& output, const std::string& settings,
                     HostGroup& group);

  // The rows earlier attempts finished, by row.
  const std::map<int64_t, GeneratedRow>& done_before() const { return done_; }
  bool resumed() const { return !done_.empty(); }
  // Appends a finished batch to this rank's file and syncs it to the disk.
  void record(const std::vector<GeneratedRow>& batch);
  // Rank 0, once the output is published: the folder goes.
  void remove() const;

 private:
  std::filesystem::path folder_;
  std::filesystem::path mine_;  // this rank's file
  std::map<int64_t, GeneratedRow> done_;
};

}  // namespace ddpt
