#include "io/generations_writer.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "io/generations_schema.hpp"
#include "io/staged_file.hpp"
#include "io/staged_h5_file.hpp"
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

// Rank 0's rows as the file's four arrays; empty ones on the other ranks.
struct Columns {
  std::vector<int64_t> tokens, offsets, finish;
  std::vector<float> logprobs;
};

Columns columns_of(const std::vector<GeneratedRow>& done) {
  Columns c;
  if (done.empty()) return c;
  c.offsets.push_back(0);
  for (const GeneratedRow& row : done) {
    c.tokens.insert(c.tokens.end(), row.tokens.begin(), row.tokens.end());
    for (const double logprob : row.logprobs) c.logprobs.push_back(static_cast<float>(logprob));
    c.offsets.push_back(static_cast<int64_t>(c.tokens.size()));
    c.finish.push_back(static_cast<int64_t>(row.finish));
  }
  return c;
}

template <class T>
torch::Tensor as_tensor(std::vector<T>& values, torch::ScalarType dtype) {
  return torch::from_blob(values.data(), {static_cast<int64_t>(values.size())}, dtype);
}

}  // namespace

void write_generations(const std::string& path, const GenerationsSource& source, int64_t rows,
                       int64_t tokens, const std::vector<GeneratedRow>& done, HostGroup& group) {
  namespace schema = generations_schema;
  const StagedOutput output{fmt::format("generations '{}'", path)};
  check_staged_space(path, tokens * kTokenBytes + (rows + 1) * kRowBytes + kStagedMetadataBytes,
                     group, output);
  Columns columns = columns_of(done);
  {
    // A failed write can leave HDF5's ranks in different collectives of its close, where the
    // watchdog sees none: the phase's deadline ends that.
    const Watchdog::Scope writing = group.phase("write of generations " + path);
    write_staged_h5(path, group.comm(), output, [&](H5File& file) {
      const H5Node& root = file;
      write_attributes(root, source, group.size());
      const std::pair<const char*, int64_t> sizes[] = {
          {schema::kTokens, tokens}, {schema::kOffsets, rows + 1}, {schema::kFinish, rows}};
      std::vector<int64_t>* values[] = {&columns.tokens, &columns.offsets, &columns.finish};
      for (size_t d = 0; d < 3; ++d) {
        H5Dataset written = root.create_dataset(sizes[d].first, torch::kLong, {sizes[d].second});
        written.write_elements(0, as_tensor(*values[d], torch::kLong));
      }
      H5Dataset logprobs = root.create_dataset(schema::kLogprobs, torch::kFloat, {tokens});
      logprobs.write_elements(0, as_tensor(columns.logprobs, torch::kFloat));
    });
  }
  // On the disk before it is published (the collective sync is also the barrier before the
  // rename): a crash afterwards cannot leave an empty file under the output's name.
  sync_and_publish(path, group, output.description, output.kept);
}

}  // namespace ddpt
