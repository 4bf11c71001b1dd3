// generate.batch_size = auto: the most prompts per forward whose generation fits in GPU memory,
// found before generating by trials at a batch's peak: its cache of keys and values allocated
// whole and the longest prompts run through it, then one new token (a model without a cache: one
// forward of the longest window the generation can run). The sizes double and then close in
// (run/batch_size_search.hpp), up to the most prompts one batch can hold (of one length, where
// the model takes no padded prompts).
#pragma once

#include <cstdint>
#include <optional>

#include "comm/host_group.hpp"
#include "data/prompts_file.hpp"
#include "generate/generation.hpp"
#include "models/model.hpp"

namespace ddpt {

// Collective over `group`: every rank tries the same sizes and the smallest answer wins.
// ConfigError (exit 2) off CUDA devices without `trial_limit`, and for a model whose forwards run
// in lockstep (ZeRO-3: a rank out of memory inside a gather would leave the others waiting);
// OutOfMemoryError (exit 6) if not even one prompt fits. `trial_limit`: a test's (trials of more
// rows fail as a full GPU would, on any device).
int64_t largest_generation_batch(Model& model, const Prompts& prompts,
                                 const GenerationOptions& options, torch::Device device,
                                 HostGroup& group, std::optional<int64_t> trial_limit);

}  // namespace ddpt
