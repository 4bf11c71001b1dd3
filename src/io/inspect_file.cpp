#include "io/inspect_file.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "h5/h5_dataset.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_series.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/generations_schema.hpp"
#include "io/metrics_schema.hpp"
#include "io/metrics_writer.hpp"
#include "io/predictions_schema.hpp"
#include "run/straggler_watch.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

namespace schema = checkpoint_schema;

// Reads every dataset under `group` (recursively), which verifies its checksum, and prints one
// line per tensor. Returns the number of values.
int64_t describe_tensors(const H5Node& group, const std::string& prefix, std::ostream& out) {
  int64_t values = 0;
  for (const auto& name : group.members()) {
    const H5Kind kind = group.kind_of(name);
    if (kind == H5Kind::kGroup) {
      const H5Group sub = group.open_group(name);
      values += describe_tensors(sub, prefix + name + "/", out);
    } else if (kind == H5Kind::kDataset) {
      const torch::Tensor t = group.read_tensor(name);
      out << fmt::format("    {:<40} [{}] {}\n", prefix + name, fmt::join(t.sizes(), ", "),
                         c10::toString(t.scalar_type()));
      values += t.numel();
    }
  }
  return values;
}

void inspect_checkpoint(const H5File& file, std::ostream& out) {
  const H5Node& root = file;
  out << fmt::format("{}: ddptrain checkpoint (format {}), {}\n", file.path(),
                     root.read_int_attribute(schema::kFormatVersionAttribute),
                     schema::is_complete(root) ? "complete" : "INCOMPLETE");
  out << fmt::format(
      "  step {}, epoch {}, written by {} rank(s)\n", root.read_int_attribute(schema::kStep),
      root.read_int_attribute(schema::kEpoch), root.read_int_attribute(schema::kWorldSize));
  for (const char* group : {schema::kModel, schema::kBuffers, "optimizer", "rng"}) {
    if (!root.has(group)) continue;
    const H5Group g = root.open_group(group);
    out << fmt::format("  /{}\n", group);
    const int64_t values = describe_tensors(g, "", out);
    out << fmt::format("    ({} values, checksums verified)\n", values);
  }
}

void inspect_predictions(const H5File& file, std::ostream& out) {
  const H5Node& root = file;
  const H5Dataset predictions = H5Dataset::open(file, predictions_schema::kPredictions);
  out << fmt::format("{}: ddptrain predictions ({}), {} rows x {} outputs, by {} rank(s)\n",
                     file.path(), root.read_string_attribute(predictions_schema::kTask),
                     predictions.rows(),
                     predictions.shape().size() > 1 ? predictions.shape()[1] : 1,
                     root.read_int_attribute(predictions_schema::kWorldSize));
  out << fmt::format("  checkpoint {} (step {})\n  input {} dataset '{}'\n",
                     root.read_string_attribute(predictions_schema::kCheckpoint),
                     root.read_int_attribute(predictions_schema::kStep),
                     root.read_string_attribute(predictions_schema::kInput),
                     root.read_string_attribute(predictions_schema::kInputDataset));
  const int64_t values = describe_tensors(root, "", out);
  out << fmt::format("  ({} values, checksums verified)\n", values);
}

// Rows, new tokens, how the rows ended, the mean log-probability and what chose the tokens.
void inspect_generations(const H5File& file, std::ostream& out) {
  namespace g = generations_schema;
  const H5Node& root = file;
  const torch::Tensor finish = root.read_tensor(g::kFinish);
  const torch::Tensor logprobs = root.read_tensor(g::kLogprobs);
  const int64_t tokens = root.read_tensor(g::kTokens).numel();
  root.read_tensor(g::kOffsets);  // read for its checksum
  const auto ended = [&](int64_t why) { return (finish == why).sum().item<int64_t>(); };
  out << fmt::format("{}: ddptrain generations, {} rows, {} new tokens, by {} rank(s)\n",
                     file.path(), finish.numel(), tokens, root.read_int_attribute(g::kWorldSize));
  out << fmt::format(
      "  ended: {} at max_new_tokens, {} at a stop token, {} with the context full\n", ended(0),
      ended(1), ended(2));
  out << fmt::format("  mean log-probability {:.4f}\n",
                     tokens > 0 ? logprobs.to(torch::kDouble).mean().item<double>() : 0.0);
  out << fmt::format("  checkpoint {} (step {})\n  prompts {}\n",
                     root.read_string_attribute(g::kCheckpoint), root.read_int_attribute(g::kStep),
                     root.read_string_attribute(g::kInput));
  out << fmt::format(
      "  max_new_tokens {}, temperature {}, top_k {}, top_p {}, seed {}, stop '{}', batch_size "
      "{}\n",
      root.read_int_attribute(g::kMaxNewTokens), root.read_double_attribute(g::kTemperature),
      root.read_int_attribute(g::kTopK), root.read_double_attribute(g::kTopP),
      root.read_int_attribute(g::kSeed), root.read_string_attribute(g::kStop),
      root.read_int_attribute(g::kBatchSize));
  out << "  (checksums verified)\n";
}

// The last value of a column, "-" for an empty one: columns may differ in length (a job killed
// between two columns of a row, a damaged file), and `back()` of an empty one is undefined
// (it crashed inspect; seen while writing tests/fuzz).
std::string last_value(const std::vector<double>& column) {
  return column.empty() ? std::string("-") : fmt::format("{:.6g}", column.back());
}

// /ranks (runs of more than one rank): its size, and the last row's slowest rank against the
// median, as the straggler warning judges them.
void describe_ranks(const H5Node& root, std::ostream& out) {
  if (!root.has(metrics_schema::kRanks)) return;
  const H5Group ranks = root.open_group(metrics_schema::kRanks);
  const std::vector<std::vector<double>> rows = ranks.read_row_series(metrics_schema::kComputeS);
  out << fmt::format("  /ranks: {} rows", rows.size());
  if (!rows.empty() && !rows.back().empty()) {
    const std::vector<double>& last = rows.back();
    const auto slowest = std::max_element(last.begin(), last.end()) - last.begin();
    out << fmt::format(
        " x {} ranks; last row: forward + backward {:.2f} ms per step on the "
        "slowest rank, {}, against the median {:.2f} ms",
        last.size(), 1e3 * last[static_cast<size_t>(slowest)], slowest,
        1e3 * StragglerWatch::median(last));
  }
  out << "\n";
}

void inspect_metrics(const H5File& file, std::ostream& out) {
  const H5Node& root = file;
  out << fmt::format(
      "{}: ddptrain metrics, ddptrain {}, {} rank(s) on {} node(s), {} / {}, "
      "created {}\n",
      file.path(), root.read_string_attribute(metrics_schema::kVersion),
      root.read_int_attribute(metrics_schema::kWorldSize),
      root.read_int_attribute(metrics_schema::kNodes),
      root.read_string_attribute(metrics_schema::kDevice),
      root.read_string_attribute(metrics_schema::kBackend),
      root.read_string_attribute(metrics_schema::kCreated));
  const H5Group train = root.open_group(metrics_schema::kTrain);
  std::vector<std::vector<double>> columns;
  for (const auto& name : MetricsWriter::train_columns()) {
    columns.push_back(train.read_series(name));
  }
  const size_t rows = columns.front().size();
  out << fmt::format("  /train: {} rows", rows);
  if (rows == 0) {
    out << "\n";
    return;
  }
  out << fmt::format(", steps {}..{}\n  last row:", columns[0].front(), columns[0].back());
  for (size_t c = 0; c < columns.size(); ++c) {
    out << fmt::format(" {} {}", MetricsWriter::train_columns()[c], last_value(columns[c]));
  }
  out << "\n";
  const H5Group eval = root.open_group(metrics_schema::kEval);
  const std::vector<std::string> eval_names = eval.members();
  const std::vector<double> eval_steps = eval.read_series(metrics_schema::kStep);
  out << fmt::format("  /eval: {} rows", eval_steps.size());
  if (!eval_steps.empty()) {
    out << fmt::format(", last at step {}:", eval_steps.back());
    for (const auto& name : eval_names) {
      if (name == metrics_schema::kStep) continue;
      out << fmt::format(" {} {}", name, last_value(eval.read_series(name)));
    }
  }
  out << "\n";
  describe_ranks(root, out);
}

}  // namespace

void inspect_file(const std::string& path, std::ostream& out) {
  const H5File file = H5File::open_read(path);
  try {
    if (file.has(predictions_schema::kPredictions)) {
      inspect_predictions(file, out);
    } else if (file.has(generations_schema::kFinish)) {
      inspect_generations(file, out);
    } else if (file.has_attribute(schema::kModelSignature)) {
      inspect_checkpoint(file, out);
    } else if (file.has(metrics_schema::kTrain)) {
      inspect_metrics(file, out);
    } else {
      throw DataError("not a ddptrain metrics, checkpoint, predictions or generations file",
                      Raised::kThisRank);
    }
  } catch (const Error& e) {
    throw DataError("'" + path + "': " + e.what(), Raised::kThisRank);
  }
}

}  // namespace ddpt
