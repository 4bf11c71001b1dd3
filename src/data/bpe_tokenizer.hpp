// GPT-2's tokenizer: byte-level BPE (byte pair encoding) read from a directory holding OpenAI's
// encoder.json + vocab.bpe or Hugging Face's vocab.json + merges.txt (the same content). Text is
// split by GPT-2's pre-tokenizer pattern, each piece's bytes are mapped to GPT-2's printable
// stand-ins (bytes_to_unicode), merged by rank, and looked up in the vocabulary; decoding undoes
// the byte map, so any bytes, UTF-8 or not, come back as they were. How and why:
// share/doc/ddptrain/file-formats.md, "Tokenizer".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ddpt {

class BpeTokenizer {
 public:
  // Reads and checks the directory's files: DataError (exit 3) naming the directory or the file
  // if neither pair is there, a file is unreadable, the vocabulary is not a JSON object of
  // distinct non-negative ids, or a merge line is not two symbols. Every rank that loads the
  // same directory raises the same error.
  static BpeTokenizer load(const std::string& directory);

  // The token ids of `text` (bytes; UTF-8 is split by code point, other bytes stand alone).
  std::vector<int64_t> encode(std::string_view text) const;
  // The bytes of `ids`: DataError (this rank) for an id the vocabulary does not hold.
  std::string decode(const std::vector<int64_t>& ids) const;
  // One more than the largest id: the least vocabulary of a model that reads these ids.
  int64_t size() const { return static_cast<int64_t>(token_bytes_.size()); }
  const std::string& directory() const { return directory_; }

  // GPT-2's pre-tokenizer: `text` cut where the pattern
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  // cuts it (the first alternative that matches at each position; \s is JavaScript's white space).
  static std::vector<std::string_view> pieces(std::string_view text);

 private:
  BpeTokenizer() = default;
  // `byte_of`: the byte each stand-in code point means.
  void read_vocabulary(const std::string& path, const std::unordered_map<int32_t, char>& byte_of);
  void read_merges(const std::string& path);
  std::vector<int64_t> encode_piece(std::string_view piece) const;

  std::string directory_;
  std::unordered_map<std::string, int64_t> ids_;          // symbol (stand-ins, UTF-8) -> id
  std::vector<std::string> token_bytes_;                  // id -> the bytes; empty: no such id
  std::unordered_map<std::string, int64_t> merge_ranks_;  // "left right" -> rank
  std::array<std::string, 256> byte_symbols_;             // byte -> its stand-in, UTF-8
  // piece -> its ids: text repeats its words (not thread-safe; a tokenizer is used by one thread)
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

}  // namespace ddpt
