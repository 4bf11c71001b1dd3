// Generated rows as 8-byte words, the one layout that the exchange before the write and the kept
// progress files (io/generation_progress.hpp) both use: per row its index, finish and token count
// n, then n token ids and the n log-probabilities' float64 bits.
#pragma once

#include <cstdint>
#include <vector>

#include "generate/generation.hpp"

namespace ddpt {

// `rows` appended to `words`.
void append_row_words(const std::vector<GeneratedRow>& rows, std::vector<int64_t>& words);

// The rows in `count` words at `at`, appended to `out`; false (and `out` as far as it got) if the
// words are not such rows of prompts [0, `prompts`).
bool read_row_words(const int64_t* at, size_t count, int64_t prompts,
                    std::vector<GeneratedRow>& out);

}  // namespace ddpt
