#include "generate/row_words.hpp"

#include <cstring>

namespace ddpt {

void append_row_words(const std::vector<GeneratedRow>& rows, std::vector<int64_t>& words) {
  for (const GeneratedRow& row : rows) {
    words.insert(words.end(), {row.row, static_cast<int64_t>(row.finish),
                               static_cast<int64_t>(row.tokens.size())});
    words.insert(words.end(), row.tokens.begin(), row.tokens.end());
    for (const double logprob : row.logprobs) {
      int64_t bits = 0;
      std::memcpy(&bits, &logprob, sizeof bits);
      words.push_back(bits);
    }
  }
}

bool read_row_words(const int64_t* at, size_t count, int64_t prompts,
                    std::vector<GeneratedRow>& out) {
  size_t i = 0;
  while (i < count) {
    if (count - i < 3) return false;
    const int64_t n = at[i + 2];
    if (at[i] < 0 || at[i] >= prompts || at[i + 1] < 0 || at[i + 1] > 2 || n < 0 ||
        static_cast<uint64_t>(n) > (count - i - 3) / 2) {
      return false;
    }
    GeneratedRow row;
    row.row = at[i];
    row.finish = static_cast<Finish>(at[i + 1]);
    row.tokens.assign(at + i + 3, at + i + 3 + n);
    row.logprobs.resize(static_cast<size_t>(n));
    std::memcpy(row.logprobs.data(), at + i + 3 + n, static_cast<size_t>(n) * sizeof(double));
    out.push_back(std::move(row));
    i += 3 + 2 * static_cast<size_t>(n);
  }
  return true;
}

}  // namespace ddpt
