// The rows a `ddptrain generate` job has finished, kept beside its output (OUT.h5.partial/) until
// the output is written, so that a job stopped by SIGUSR1/SIGTERM (exit 75) or killed continues
// where it was: the same command generates only the batches that are not there. Each rank appends
// each finished batch, as one checksummed frame, to a file of its own for this attempt and syncs
// it to the disk, so a rank killed with SIGKILL loses at most the batch in flight: a frame a kill
// or a crash cut short, or left zero-filled, is not read. The rows are the same whichever rank made
// them (generate/generation.hpp), so an attempt may run on another rank count. The folder also
// holds the settings that chose the tokens: an attempt with other settings starts afresh.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comm/host_group.hpp"
#include "generate/generation.hpp"

namespace ddpt {

class GenerationProgress {
 public:
  // Collective over `group`: rank 0 keeps OUT.h5.partial/ if its settings are `settings`, else
  // makes it afresh, reads the rows (of `rows` prompts) every earlier attempt finished, and tells
  // every rank which.
  GenerationProgress(const std::filesystem::path& output, const std::string& settings, int64_t rows,
                     HostGroup& group);

  // Whether an earlier attempt finished `row` (every rank).
  bool done_before(int64_t row) const { return done_rows_.count(row) != 0; }
  int64_t rows_done_before() const { return static_cast<int64_t>(done_rows_.size()); }
  // Rank 0: the rows earlier attempts finished, by row (empty on the other ranks).
  const std::map<int64_t, GeneratedRow>& earlier_rows() const { return earlier_; }
  // Appends a finished batch to this rank's file as one frame and syncs it to the disk.
  void record(const std::vector<GeneratedRow>& batch);
  // Rank 0, once the output is published: the folder goes.
  void remove() const;

 private:
  std::filesystem::path folder_;
  std::filesystem::path mine_;  // this rank's file in this attempt
  std::set<int64_t> done_rows_;
  std::map<int64_t, GeneratedRow> earlier_;
};

}  // namespace ddpt
