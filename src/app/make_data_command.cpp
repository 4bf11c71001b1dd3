// ddptrain make-data KIND --output FILE: the synthetic datasets as HDF5 files, so users see the
// layout ddptrain reads (data.type = hdf5 / tokens) and tests have data on disk; and prompts for
// `ddptrain generate` from a text (data/prompts_file.hpp). Text is bytes, or GPT-2's tokens with
// --tokenizer (data/bpe_tokenizer.hpp).
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

#include "app/commands.hpp"
#include "comm/host_group.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/synthetic_tables.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "io/staged_file.hpp"
#include "io/staged_h5_file.hpp"
#include "util/check.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace po = boost::program_options;

namespace ddpt {
namespace {

constexpr int64_t kMaxUint16Vocab = int64_t{1} << 16;

const char* kMakeDataUsage =
    "ddptrain make-data classification|regression|tokens|prompts --output FILE [options]";

struct MakeDataOptions {
  std::string kind;
  std::string output;
  bool force = false;
  TeacherSpec teacher;
  int64_t classes = 10;
  int64_t outputs = 1;
  int64_t val_samples = 0;
  int64_t tokens = 1000000;
  int64_t vocab = 256;
  int64_t val_tokens = 0;
  std::string from_text;
  std::string tokenizer;
};

po::options_description make_data_options(MakeDataOptions& o) {
  po::options_description d(std::string("usage: ") + kMakeDataUsage +
                                "\n\nWrites a synthetic dataset as HDF5 (the layout data.type = "
                                "hdf5 and tokens read)",
                            100);
  d.add_options()("output", po::value(&o.output), "file to write (required)")(
      "force", po::bool_switch(&o.force), "overwrite an existing file")(
      "seed", po::value(&o.teacher.seed)->default_value(1234), "seed (run.seed of a deck)")(
      "samples", po::value(&o.teacher.samples)->default_value(16384),
      "classification, regression: rows of inputs/targets")(
      "features", po::value(&o.teacher.features)->default_value(256), "input features per row")(
      "classes", po::value(&o.classes)->default_value(10), "classification: classes")(
      "outputs", po::value(&o.outputs)->default_value(1), "regression: target values per row")(
      "teacher-hidden", po::value(&o.teacher.teacher_hidden)->default_value(64),
      "hidden width of the random teacher network")(
      "val-samples", po::value(&o.val_samples)->default_value(0),
      "also write val_inputs/val_targets with this many rows (same teacher)")(
      "tokens", po::value(&o.tokens)->default_value(1000000), "tokens: length of the stream")(
      "vocab", po::value(&o.vocab)->default_value(256), "tokens: vocabulary size")(
      "val-tokens", po::value(&o.val_tokens)->default_value(0),
      "tokens: also write val_tokens of this length")(
      "from-text", po::value(&o.from_text),
      "tokens: a text file's tokens as the stream (--val-tokens of them at its end for "
      "validation); prompts (required): a text file, one prompt a line, empty lines skipped. "
      "Each byte a token id (vocab 256), or --tokenizer's tokens")(
      "tokenizer", po::value(&o.tokenizer),
      "with --from-text: directory with GPT-2's encoder.json + vocab.bpe (or vocab.json + "
      "merges.txt); the vocab attribute is its size (50257 for GPT-2's); empty: text is bytes "
      "(vocab 256), as data.tokenizer");
  return d;
}

MakeDataOptions parse(const std::vector<std::string>& args) {
  MakeDataOptions o;
  po::options_description described = make_data_options(o);
  po::options_description all;
  all.add(described).add_options()("kind", po::value(&o.kind));
  po::positional_options_description positional;
  positional.add("kind", 1);
  try {
    po::variables_map values;
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
    po::notify(values);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (usage: " + kMakeDataUsage + ")");
  }
  if (o.kind != "classification" && o.kind != "regression" && o.kind != "tokens" &&
      o.kind != "prompts") {
    throw ConfigError("make-data: kind '" + o.kind +
                      "' is not one of classification, regression, tokens, prompts (usage: " +
                      kMakeDataUsage + ")");
  }
  if (o.kind == "prompts" && o.from_text.empty()) {
    throw ConfigError("make-data prompts: --from-text FILE is required");
  }
  if (!o.from_text.empty() && o.kind != "prompts" && o.kind != "tokens") {
    throw ConfigError("make-data: --from-text goes with tokens and prompts only");
  }
  if (!o.tokenizer.empty() && o.from_text.empty()) {
    throw ConfigError("make-data: --tokenizer goes with --from-text only");
  }
  if (o.output.empty())
    throw ConfigError(std::string("make-data: --output is required: ") + kMakeDataUsage);
  if (!o.force && std::filesystem::exists(o.output)) {
    throw ConfigError("make-data: '" + o.output + "' exists (use --force to overwrite it)");
  }
  const bool sizes_ok = o.teacher.samples > 0 && o.teacher.features > 0 && o.outputs > 0 &&
                        o.teacher.teacher_hidden > 0 && o.val_samples >= 0 && o.tokens > 1 &&
                        o.vocab > 1 && o.val_tokens >= 0;
  if (!sizes_ok) throw ConfigError("make-data: sizes must be positive");
  o.teacher.outputs = o.kind == "classification" ? o.classes : o.outputs;
  if (o.kind == "classification" && o.classes < 2) {
    throw ConfigError("make-data: --classes must be at least 2");
  }
  if (o.vocab > kMaxUint16Vocab * kMaxUint16Vocab) {
    throw ConfigError("make-data: --vocab must fit in uint32");
  }
  return o;
}

void write_tables(const H5Node& root, const MakeDataOptions& o) {
  TeacherSpec spec = o.teacher;
  spec.samples += o.val_samples;  // one teacher labels both parts
  const bool classification = o.kind == "classification";
  const Tables t = classification ? teacher_classification(spec) : teacher_regression(spec);
  using torch::indexing::Slice;
  auto part = [&](const torch::Tensor& x, bool val) {
    return val ? x.index({Slice(o.teacher.samples, torch::indexing::None)})
               : x.index({Slice(0, o.teacher.samples)});
  };
  for (const bool val : {false, true}) {
    if (val && o.val_samples == 0) continue;
    const std::string prefix = val ? "val_" : "";
    for (const auto& [name, table] : {std::pair{"inputs", t.inputs}, {"targets", t.targets}}) {
      const torch::Tensor rows = part(table, val);
      H5Dataset d = root.create_dataset(prefix + name, rows.scalar_type(), rows.sizes().vec());
      d.write_rows(0, rows);
      if (classification && std::string(name) == "targets") {
        d.write_attribute("classes", o.teacher.outputs);
      }
    }
  }
}

// A text file's bytes.
std::string make_data_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw DataError("make-data: cannot read '" + path + "'", Raised::kThisRank);
  std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) throw DataError("make-data: cannot read '" + path + "'", Raised::kThisRank);
  return text;
}

// Text as token ids: the tokenizer's, or each byte an id.
std::vector<int64_t> make_data_ids(const std::string& text, const BpeTokenizer* tokenizer) {
  if (tokenizer != nullptr) return tokenizer->encode(text);
  return std::vector<int64_t>(reinterpret_cast<const unsigned char*>(text.data()),
                              reinterpret_cast<const unsigned char*>(text.data()) + text.size());
}

int64_t make_data_vocab(const BpeTokenizer* tokenizer) {
  return tokenizer != nullptr ? tokenizer->size() : 256;
}

// The stream: a Markov chain's, or a text's tokens (--val-tokens of them at its end).
torch::Tensor token_stream(MakeDataOptions& o, const BpeTokenizer* tokenizer) {
  if (o.from_text.empty()) return markov_tokens(o.tokens + o.val_tokens, o.vocab, o.teacher.seed);
  const std::vector<int64_t> ids = make_data_ids(make_data_text(o.from_text), tokenizer);
  const auto total = static_cast<int64_t>(ids.size());
  if (total < o.val_tokens + 2) {
    throw DataError(fmt::format("make-data: '{}' holds {} tokens: too few for --val-tokens {}",
                                o.from_text, total, o.val_tokens),
                    Raised::kThisRank);
  }
  o.vocab = make_data_vocab(tokenizer);
  o.tokens = total - o.val_tokens;
  return torch::tensor(ids, torch::kLong);
}

void write_tokens(const H5Node& root, MakeDataOptions o, const BpeTokenizer* tokenizer) {
  const torch::Tensor stream = token_stream(o, tokenizer);
  const H5StoredAs stored = o.vocab <= kMaxUint16Vocab ? H5StoredAs::kUint16 : H5StoredAs::kUint32;
  using torch::indexing::Slice;
  for (const bool val : {false, true}) {
    const int64_t length = val ? o.val_tokens : o.tokens;
    if (length == 0) continue;
    const int64_t first = val ? o.tokens : 0;
    H5Dataset d =
        root.create_dataset(val ? "val_tokens" : "tokens", torch::kLong, {length}, stored);
    d.write_rows(0, stream.index({Slice(first, first + length)}));
    d.write_attribute("vocab", o.vocab);
  }
}

// One prompt a line of the text, its tokens as ids.
void write_prompts(const H5Node& root, const MakeDataOptions& o, const BpeTokenizer* tokenizer) {
  std::istringstream text(make_data_text(o.from_text));
  // getline drops the newline; a line's other bytes (a carriage return too) stay in its prompt.
  std::vector<int64_t> tokens;
  std::vector<int64_t> offsets{0};
  std::string line;
  while (std::getline(text, line)) {
    if (line.empty()) continue;
    const std::vector<int64_t> ids = make_data_ids(line, tokenizer);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  if (offsets.size() < 2) {
    throw DataError("make-data: '" + o.from_text + "' holds no line with text", Raised::kThisRank);
  }
  const torch::Tensor ids = torch::tensor(tokens, torch::kLong);
  const int64_t vocab = make_data_vocab(tokenizer);
  H5Dataset written =
      root.create_dataset("tokens", torch::kLong, {ids.numel()},
                          vocab <= kMaxUint16Vocab ? H5StoredAs::kUint16 : H5StoredAs::kUint32);
  written.write_rows(0, ids);
  written.write_attribute("vocab", vocab);
  root.create_dataset("offsets", torch::kLong, {static_cast<int64_t>(offsets.size())})
      .write_rows(0, torch::tensor(offsets, torch::kLong));
}

}  // namespace

int make_data_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const MakeDataOptions o = parse(args);
  // Every rank reads the tokenizer, so that each raises a fault in its files alike.
  std::optional<BpeTokenizer> tokenizer;
  if (!o.tokenizer.empty()) tokenizer = BpeTokenizer::load(o.tokenizer);
  const BpeTokenizer* text_tokens = tokenizer ? &*tokenizer : nullptr;
  // Unwatched: make-data reads no deck, so there is no dist.timeout_s; the other ranks only wait
  // for rank 0, which writes the file alone.
  HostGroup every_rank(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  if (mpi.world_rank() == 0) {
    const StagedOutput output{fmt::format("'{}'", o.output)};
    write_staged_h5(o.output, MPI_COMM_NULL, output, [&](H5File& file) {
      const H5Node& root = file;
      root.write_attribute("kind", o.kind);
      root.write_attribute("generator", "ddptrain make-data " + ddptrain_version());
      root.write_attribute("seed", o.teacher.seed);
      if (o.kind == "tokens") {
        write_tokens(root, o, text_tokens);
      } else if (o.kind == "prompts") {
        write_prompts(root, o, text_tokens);
      } else {
        write_tables(root, o);
      }
    });
    // On the disk before it is published: a crash afterwards cannot leave an empty file.
    HostGroup alone(MPI_COMM_SELF, /*watchdog=*/nullptr);
    sync_and_publish(o.output, alone, output.description, output.kept);
    const H5File written = H5File::open_read(o.output);
    std::cout << fmt::format("wrote {} ({}):", o.output, o.kind);
    for (const auto& name : written.members()) {
      const H5Dataset d = H5Dataset::open(written, name);
      std::cout << fmt::format(" {} [{}] {};", name, fmt::join(d.shape(), ", "), d.stored_type());
    }
    std::cout << "\n";
  }
  every_rank.barrier("make-data's file written");
  return 0;
}

std::string make_data_help() {
  MakeDataOptions o;
  std::ostringstream out;
  out << make_data_options(o);
  return out.str();
}

}  // namespace ddpt
