#include "io/generations_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "generate/row_words.hpp"
#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "io/generations_schema.hpp"
#include "io/staged_file.hpp"
#include "io/staged_h5_file.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

// Per new token: its id and log-probability; per row: its offset and finish.
constexpr int64_t kTokenBytes = sizeof(int64_t) + sizeof(float);
constexpr int64_t kRowBytes = 2 * sizeof(int64_t);

void write_attributes(const H5Node& root, const GenerationsSource& source, int world_size) {
  namespace schema = generations_schema;
  const GenerationOptions& o = source.options;
  root.write_attribute(schema::kVersion, ddptrain_version());
  root.write_attribute(schema::kKind, std::string("generations"));
  root.write_attribute(schema::kCheckpoint,
                       std::filesystem::weakly_canonical(source.checkpoint).string());
  root.write_attribute(schema::kStep, source.step);
  root.write_attribute(schema::kInput, std::filesystem::absolute(source.input).string());
  root.write_attribute(schema::kMaxNewTokens, o.max_new_tokens);
  root.write_attribute(schema::kTemperature, o.sampling.temperature);
  root.write_attribute(schema::kTopK, o.sampling.top_k);
  root.write_attribute(schema::kTopP, o.sampling.top_p);
  root.write_attribute(schema::kSeed, o.sampling.seed);
  root.write_attribute(schema::kStop, source.stop_text);
  root.write_attribute(schema::kBatchSize, o.batch_size);
  root.write_attribute(schema::kWorldSize, static_cast<int64_t>(world_size));
}

// Where rank r's run of rows begins: an equal share each.
int64_t first_row_of(int rank, int64_t rows, int ranks) {
  return rows * rank / ranks;
}

// Collective: the rows [first_row_of(rank), first_row_of(rank + 1)), in order, from whichever rank
// holds each; false (agreed) unless each arrived exactly once.
bool my_run(const std::vector<GeneratedRow>& mine, int64_t rows, HostGroup& group,
            std::vector<GeneratedRow>& run) {
  std::vector<std::vector<int64_t>> to_each(static_cast<size_t>(group.size()));
  std::vector<int64_t> firsts;
  for (int r = 0; r <= group.size(); ++r) firsts.push_back(first_row_of(r, rows, group.size()));
  for (const GeneratedRow& row : mine) {
    const auto owner = std::upper_bound(firsts.begin(), firsts.end(), row.row) - firsts.begin() - 1;
    append_row_words({row}, to_each[static_cast<size_t>(owner)]);
  }
  const std::vector<int64_t> words = group.exchange("generated rows to their writers", to_each);
  bool sound = read_row_words(words.data(), words.size(), rows, run);
  std::sort(run.begin(), run.end(),
            [](const GeneratedRow& a, const GeneratedRow& b) { return a.row < b.row; });
  const int64_t first = firsts[static_cast<size_t>(group.rank())];
  sound = sound &&
          static_cast<int64_t>(run.size()) == firsts[static_cast<size_t>(group.rank()) + 1] - first;
  for (size_t i = 0; sound && i < run.size(); ++i) {
    sound = run[i].row == first + static_cast<int64_t>(i);
  }
  return group.all("every generated row once", sound);
}

// A run of rows as the file's four arrays: the offsets are each row's end, counted from
// `first_token` (and, for the run that starts at row 0, the 0 before it).
struct Columns {
  std::vector<int64_t> tokens, offsets, finish;
  std::vector<float> logprobs;
};

Columns columns_of(const std::vector<GeneratedRow>& run, int64_t first_token, bool from_row_0) {
  Columns c;
  if (from_row_0) c.offsets.push_back(0);
  for (const GeneratedRow& row : run) {
    c.tokens.insert(c.tokens.end(), row.tokens.begin(), row.tokens.end());
    for (const double logprob : row.logprobs) c.logprobs.push_back(static_cast<float>(logprob));
    c.offsets.push_back(first_token + static_cast<int64_t>(c.tokens.size()));
    c.finish.push_back(static_cast<int64_t>(row.finish));
  }
  return c;
}

template <class T>
torch::Tensor as_tensor(std::vector<T>& values, torch::ScalarType dtype) {
  return torch::from_blob(values.data(), {static_cast<int64_t>(values.size())}, dtype);
}

}  // namespace

int64_t write_generations(const std::string& path, const GenerationsSource& source, int64_t rows,
                          const std::vector<GeneratedRow>& mine, HostGroup& group) {
  namespace schema = generations_schema;
  std::vector<GeneratedRow> run;
  if (!my_run(mine, rows, group, run)) {
    throw Error("generate: the rows generated and kept in " + path +
                    ".partial are not every prompt's once: remove that folder and run again",
                ExitCode::kInternal, Raised::kAllRanks);
  }
  int64_t my_tokens = 0;
  for (const GeneratedRow& row : run) my_tokens += static_cast<int64_t>(row.tokens.size());
  // Token counts are far below 2^53: exact as doubles.
  const std::vector<double> tokens_of = group.all_gather(
      "generated tokens per rank", std::vector<double>{static_cast<double>(my_tokens)});
  int64_t first_token = 0;
  int64_t tokens = 0;
  for (int r = 0; r < group.size(); ++r) {
    if (r < group.rank()) first_token += static_cast<int64_t>(tokens_of[static_cast<size_t>(r)]);
    tokens += static_cast<int64_t>(tokens_of[static_cast<size_t>(r)]);
  }
  const StagedOutput output{fmt::format("generations '{}'", path)};
  check_staged_space(path, tokens * kTokenBytes + (rows + 1) * kRowBytes + kStagedMetadataBytes,
                     group, output);
  const int64_t first_row = first_row_of(group.rank(), rows, group.size());
  Columns columns = columns_of(run, first_token, group.rank() == 0);
  {
    // A failed write can leave HDF5's ranks in different collectives of its close, where the
    // watchdog sees none: the phase's deadline ends that.
    const Watchdog::Scope writing = group.phase("write of generations " + path);
    write_staged_h5(path, group.comm(), output, [&](H5File& file) {
      const H5Node& root = file;
      write_attributes(root, source, group.size());
      root.create_dataset(schema::kTokens, torch::kLong, {tokens})
          .write_elements(first_token, as_tensor(columns.tokens, torch::kLong));
      root.create_dataset(schema::kOffsets, torch::kLong, {rows + 1})
          .write_elements(group.rank() == 0 ? 0 : first_row + 1,
                          as_tensor(columns.offsets, torch::kLong));
      root.create_dataset(schema::kFinish, torch::kLong, {rows})
          .write_elements(first_row, as_tensor(columns.finish, torch::kLong));
      root.create_dataset(schema::kLogprobs, torch::kFloat, {tokens})
          .write_elements(first_token, as_tensor(columns.logprobs, torch::kFloat));
    });
  }
  // On the disk before it is published (the collective sync is also the barrier before the
  // rename): a crash afterwards cannot leave an empty file under the output's name.
  sync_and_publish(path, group, output.description, output.kept);
  return tokens;
}

}  // namespace ddpt
