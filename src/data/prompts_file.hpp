// The prompts `ddptrain generate` continues: an HDF5 file of every prompt's token ids one after
// another in `/tokens` (1-D, any integer type) and where each begins in `/offsets` (int64, rows +
// 1 values from 0, the last the token count), so prompt i is tokens[offsets[i]:offsets[i+1]]. A
// layout h5py users write in three lines and `make-data prompts` writes from text.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ddpt {

class Prompts {
 public:
  // Reads and checks the whole file (a few bytes per prompt token): DataError (exit 3) naming the
  // file, and the row where one is at fault, if a dataset is missing or of the wrong type, the
  // offsets do not start at 0, do not increase (an empty prompt) or do not end at the token count,
  // or a token id is negative.
  static Prompts read(const std::string& path);
  // The same checks on prompts held in memory (`name` stands for the file in messages).
  Prompts(std::string name, torch::Tensor tokens, std::vector<int64_t> offsets);
  // DataError naming the row if a prompt holds a token id of `vocab` or above, or is longer than
  // `context` tokens (the model's window).
  void check_fit(int64_t vocab, int64_t context) const;

  int64_t rows() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t length(int64_t row) const { return offsets_[row + 1] - offsets_[row]; }
  // Prompt `row`'s ids, 1-D int64 (a view of the file's tokens).
  torch::Tensor row(int64_t row) const;
  const std::string& path() const { return path_; }
  // A hash of every token id and offset: other prompts at the same path hash otherwise.
  uint64_t fingerprint() const;

 private:
  void check_layout() const;

  std::string path_;
  torch::Tensor tokens_;          // 1-D int64, every prompt's ids
  std::vector<int64_t> offsets_;  // rows + 1
};

}  // namespace ddpt
