// The generations file (`ddptrain generate`): the new tokens of every prompt, in the prompts'
// order, with why each row ended and each token's log-probability. Written collectively: the rows,
// wherever they were made, are first exchanged so that each rank holds one run of consecutive rows
// (an equal share), and each rank writes its run of every dataset (MPI-IO), so no rank ever holds
// more than its share. Staged (written under a staging name, synced and renamed) like every
// output, so a failed run leaves nothing under the output's name. Names in
// io/generations_schema.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/host_group.hpp"
#include "generate/generation.hpp"

namespace ddpt {

// The root attributes: where the tokens come from and how they were chosen.
struct GenerationsSource {
  std::string checkpoint;  // as given; written as its canonical path
  int64_t step = 0;        // the checkpoint's step
  std::string input;       // the prompts file, as given; written as its absolute path
  GenerationOptions options;
  std::string stop_text;  // generate.stop as the deck gave it
};

// Collective over `group`: writes `path` with the rows of `rows` prompts, of which `mine` holds
// this rank's, in any order; returns the new tokens of all rows. Error (exit 1, every rank) if the
// ranks' rows are not every prompt's row once: those come from this job and the progress kept in
// `path`.partial (io/generation_progress.hpp), which the message then says to remove.
int64_t write_generations(const std::string& path, const GenerationsSource& source, int64_t rows,
                          const std::vector<GeneratedRow>& mine, HostGroup& group);

}  // namespace ddpt
