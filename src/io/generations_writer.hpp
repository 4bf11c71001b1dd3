// The generations file (`ddptrain generate`): the new tokens of every prompt, in the prompts'
// order, with why each row ended and each token's log-probability. Rank 0 holds every row and
// writes the datasets; the file is created and closed collectively, staged (written under a
// staging name, synced and renamed) like every output, so a failed run leaves nothing under the
// output's name. Names in io/generations_schema.hpp.
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

// Collective over `group`: writes `path` with `rows` rows and `tokens` new tokens in all; `done`
// holds every row in row order on rank 0 and nothing on the other ranks.
void write_generations(const std::string& path, const GenerationsSource& source, int64_t rows,
                       int64_t tokens, const std::vector<GeneratedRow>& done, HostGroup& group);

}  // namespace ddpt
