#include "data/bpe_tokenizer.hpp"

#include <fmt/format.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.hpp"

namespace ddpt {
namespace {

// Ids index a table: a bound far above any published vocabulary (GPT-2's 50257, GPT-4's 100277)
// keeps a stray large id from asking for gigabytes.
constexpr uint64_t kBpeMostIds = uint64_t{1} << 24;

// What the pre-tokenizer's pattern tells apart in a code point (or in bytes that are not UTF-8,
// which no class of the pattern but "other" holds).
enum class BpeClass { kLetter, kNumber, kSpace, kOther };

struct BpeUnit {
  BpeClass kind;
  size_t bytes;  // its length in the text
};

// JavaScript's \s (ECMA-262's WhiteSpace and LineTerminator): the reference encoders' set, which
// differs from ICU's white space (U+0085, U+180E) and from Python's.
bool bpe_js_space(UChar32 c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000 || c == 0xfeff;
}

BpeUnit bpe_unit_at(std::string_view text, size_t at) {
  size_t next = at;
  UChar32 c = 0;
  U8_NEXT(text.data(), next, text.size(), c);
  const size_t bytes = next - at;
  if (c < 0) return {BpeClass::kOther, bytes};
  if (bpe_js_space(c)) return {BpeClass::kSpace, bytes};
  const uint32_t category = U_GET_GC_MASK(c);
  if (category & U_GC_L_MASK) return {BpeClass::kLetter, bytes};
  if (category & U_GC_N_MASK) return {BpeClass::kNumber, bytes};
  return {BpeClass::kOther, bytes};
}

// The end of the run of `kind` that starts at `at`.
size_t bpe_run_end(std::string_view text, size_t at, BpeClass kind) {
  while (at < text.size()) {
    const BpeUnit unit = bpe_unit_at(text, at);
    if (unit.kind != kind) break;
    at += unit.bytes;
  }
  return at;
}

// The length of the contraction ('s 't 're 've 'm 'll 'd) at `at`, 0 if none.
size_t bpe_contraction(std::string_view text, size_t at) {
  if (text[at] != '\'') return 0;
  const std::string_view rest = text.substr(at + 1);
  for (const std::string_view tail : {"s", "t", "re", "ve", "m", "ll", "d"}) {
    if (rest.substr(0, tail.size()) == tail) return 1 + tail.size();
  }
  return 0;
}

// The end of the piece that starts at `at`: the pattern's alternatives in their order.
size_t bpe_piece_end(std::string_view text, size_t at) {
  if (const size_t contraction = bpe_contraction(text, at)) return at + contraction;
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: a space joins the run of any class after it.
  if (text[at] == ' ' && at + 1 < text.size()) {
    const BpeUnit after = bpe_unit_at(text, at + 1);
    if (after.kind != BpeClass::kSpace) return bpe_run_end(text, at + 1, after.kind);
  }
  const BpeUnit first = bpe_unit_at(text, at);
  if (first.kind != BpeClass::kSpace) return bpe_run_end(text, at, first.kind);
  // `\s+(?!\S)` gives its last white space back to the word after the run; `\s+` takes a run of
  // one before a word whole.
  size_t end = at;
  size_t last = at;
  while (end < text.size()) {
    const BpeUnit unit = bpe_unit_at(text, end);
    if (unit.kind != BpeClass::kSpace) break;
    last = end;
    end += unit.bytes;
  }
  return end == text.size() || last == at ? end : last;
}

// GPT-2's bytes_to_unicode: the printable bytes stand for themselves; the others (controls, the
// space, 0x7f-0xa0, 0xad) for code points from 256 on, in byte order, so that no symbol of the
// vocabulary holds white space or a control character.
std::array<UChar32, 256> bpe_byte_code_points() {
  std::array<UChar32, 256> code_points{};
  UChar32 next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xa1 && byte <= 0xac) ||
                           (byte >= 0xae && byte <= 0xff);
    code_points[byte] = printable ? byte : next++;
  }
  return code_points;
}

std::string bpe_utf8(UChar32 c) {
  char bytes[U8_MAX_LENGTH];
  int32_t length = 0;
  U8_APPEND_UNSAFE(bytes, length, c);
  return std::string(bytes, length);
}

[[noreturn]] void bad_tokenizer(const std::string& where, const std::string& what) {
  throw DataError(fmt::format("tokenizer '{}': {}", where, what), Raised::kAllRanks);
}

std::string bpe_read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (!file.is_open() || file.bad()) bad_tokenizer(path.string(), "cannot be read");
  return text;
}

// The pair of files in `directory`: OpenAI's names, else Hugging Face's.
std::pair<std::filesystem::path, std::filesystem::path> bpe_files(const std::string& directory) {
  namespace fs = std::filesystem;
  for (const auto& [vocabulary, merges] :
       {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
    const fs::path v = fs::path(directory) / vocabulary;
    const fs::path m = fs::path(directory) / merges;
    if (fs::is_regular_file(v) && fs::is_regular_file(m)) return {v, m};
  }
  bad_tokenizer(directory,
                "holds neither encoder.json + vocab.bpe nor vocab.json + merges.txt (GPT-2's "
                "tokenizer files)");
}

}  // namespace

std::vector<std::string_view> BpeTokenizer::pieces(std::string_view text) {
  std::vector<std::string_view> found;
  for (size_t at = 0; at < text.size();) {
    const size_t end = bpe_piece_end(text, at);
    found.push_back(text.substr(at, end - at));
    at = end;
  }
  return found;
}

BpeTokenizer BpeTokenizer::load(const std::string& directory) {
  const auto [vocabulary_path, merges_path] = bpe_files(directory);
  BpeTokenizer t;
  t.directory_ = directory;
  const std::array<UChar32, 256> code_points = bpe_byte_code_points();
  std::unordered_map<int32_t, char> byte_of;
  for (int byte = 0; byte < 256; ++byte) {
    t.byte_symbols_[byte] = bpe_utf8(code_points[byte]);
    byte_of[code_points[byte]] = static_cast<char>(byte);
  }
  t.read_vocabulary(vocabulary_path.string(), byte_of);
  for (const std::string& symbol : t.byte_symbols_) {
    if (t.ids_.count(symbol) == 0) {
      bad_tokenizer(vocabulary_path.string(), "no id for the byte symbol '" + symbol + "'");
    }
  }
  t.read_merges(merges_path.string());
  return t;
}

void BpeTokenizer::read_vocabulary(const std::string& path,
                                   const std::unordered_map<int32_t, char>& byte_of) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(bpe_read_file(path));
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    std::replace(why.begin(), why.end(), '\n', ' ');  // the error is one line
    bad_tokenizer(path, fmt::format("not JSON ({})", why));
  }
  if (!json.is_object()) bad_tokenizer(path, "not a JSON object of symbol: id");
  for (const auto& [symbol, id] : json.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= kBpeMostIds) {
      bad_tokenizer(path, fmt::format("the id of '{}' is {}, not an integer from 0 to {}", symbol,
                                      id.dump(), kBpeMostIds - 1));
    }
    const auto at = static_cast<int64_t>(id.get<uint64_t>());
    if (at >= size()) token_bytes_.resize(at + 1);
    std::string& bytes = token_bytes_[at];
    if (symbol.empty() || !bytes.empty()) {
      bad_tokenizer(path, fmt::format("id {} is given twice, or to an empty symbol", at));
    }
    for (size_t i = 0; i < symbol.size();) {
      UChar32 c = 0;
      U8_NEXT(symbol.data(), i, symbol.size(), c);
      const auto byte = byte_of.find(c);
      if (byte == byte_of.end()) {
        bad_tokenizer(path, "symbol '" + symbol + "' holds a character that stands for no byte");
      }
      bytes += byte->second;
    }
    ids_[symbol] = at;
  }
}

void BpeTokenizer::read_merges(const std::string& path) {
  std::istringstream lines(bpe_read_file(path));
  std::string line;
  int64_t number = 0;
  int64_t rank = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    const std::string left = line.substr(0, space);
    const std::string right = space == std::string::npos ? "" : line.substr(space + 1);
    if (left.empty() || right.empty() || right.find(' ') != std::string::npos) {
      bad_tokenizer(path, fmt::format("line {} is not two symbols with a space between", number));
    }
    if (ids_.count(left + right) == 0) {
      bad_tokenizer(path, fmt::format("line {} makes '{}', which the vocabulary does not hold",
                                      number, left + right));
    }
    merge_ranks_[line] = rank++;  // a pair given twice: the later rank, as GPT-2's encoder.py
  }
}

std::vector<int64_t> BpeTokenizer::encode_piece(std::string_view piece) const {
  std::vector<std::string> word;
  for (const char c : piece) word.push_back(byte_symbols_[static_cast<unsigned char>(c)]);
  while (word.size() > 1) {
    int64_t best = std::numeric_limits<int64_t>::max();
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const auto rank = merge_ranks_.find(word[i] + ' ' + word[i + 1]);
      if (rank != merge_ranks_.end() && rank->second < best) {
        best = rank->second;
        best_at = i;
      }
    }
    if (best == std::numeric_limits<int64_t>::max()) break;
    // Every occurrence of the pair, left to right, as GPT-2's encoder.py merges them.
    const std::string left = word[best_at];
    const std::string right = word[best_at + 1];
    std::vector<std::string> merged;
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
        merged.push_back(left + right);
        ++i;
      } else {
        merged.push_back(word[i]);
      }
    }
    word = std::move(merged);
  }
  std::vector<int64_t> ids;
  for (const std::string& symbol : word) ids.push_back(ids_.at(symbol));  // load checked each
  return ids;
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int64_t> ids;
  for (size_t at = 0; at < text.size();) {
    const size_t end = bpe_piece_end(text, at);
    const std::string piece(text.substr(at, end - at));
    auto cached = cache_.find(piece);
    if (cached == cache_.end()) cached = cache_.emplace(piece, encode_piece(piece)).first;
    ids.insert(ids.end(), cached->second.begin(), cached->second.end());
    at = end;
  }
  return ids;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  for (const int64_t id : ids) {
    if (id < 0 || id >= size() || token_bytes_[id].empty()) {
      throw DataError(
          fmt::format("tokenizer '{}': token id {} is not in its vocabulary", directory_, id),
          Raised::kThisRank);
    }
    text += token_bytes_[id];
  }
  return text;
}

}  // namespace ddpt
