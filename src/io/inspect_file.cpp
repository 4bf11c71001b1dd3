#include "io/inspect_file.hpp"

#include <fmt/format.h>

#include "h5/h5_dataset.hpp"
#include "h5/h5_series.hpp"
#include "h5/h5_tensor.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/metrics_writer.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

namespace schema = checkpoint_schema;

// Reads every dataset under `group` (recursively), which verifies its checksum, and prints one
// line per tensor. Returns the number of values.
int64_t describe_tensors(hid_t group, const std::string& prefix, std::ostream& out) {
  int64_t values = 0;
  for (const auto& name : list_members(group)) {
    const H5I_type_t type = object_type(group, name);
    if (type == H5I_GROUP) {
      const H5Group sub = H5Group::open(group, name);
      values += describe_tensors(sub.id(), prefix + name + "/", out);
    } else if (type == H5I_DATASET) {
      const torch::Tensor t = read_tensor(group, name);
      out << fmt::format("    {:<40} [{}] {}\n", prefix + name, fmt::join(t.sizes(), ", "),
                         c10::toString(t.scalar_type()));
      values += t.numel();
    }
  }
  return values;
}

void inspect_checkpoint(const H5File& file, std::ostream& out) {
  const hid_t root = file.id();
  out << fmt::format("{}: ddptrain checkpoint (format {}), {}\n", file.path(),
                     read_int_attribute(root, schema::kFormatVersionAttribute),
                     schema::is_complete(root) ? "complete" : "INCOMPLETE");
  out << fmt::format(
      "  step {}, epoch {}, written by {} rank(s)\n", read_int_attribute(root, schema::kStep),
      read_int_attribute(root, schema::kEpoch), read_int_attribute(root, schema::kWorldSize));
  for (const char* group : {schema::kModel, schema::kBuffers, "optimizer", "rng"}) {
    if (!has_object(root, group)) continue;
    const H5Group g = H5Group::open(root, group);
    out << fmt::format("  /{}\n", group);
    const int64_t values = describe_tensors(g.id(), "", out);
    out << fmt::format("    ({} values, checksums verified)\n", values);
  }
}

void inspect_predictions(const H5File& file, std::ostream& out) {
  const hid_t root = file.id();
  const H5Dataset predictions = H5Dataset::open(file, "predictions");
  out << fmt::format("{}: ddptrain predictions ({}), {} rows x {} outputs, by {} rank(s)\n",
                     file.path(), read_string_attribute(root, "task"), predictions.rows(),
                     predictions.shape().size() > 1 ? predictions.shape()[1] : 1,
                     read_int_attribute(root, "world_size"));
  out << fmt::format("  checkpoint {} (step {})\n  input {} dataset '{}'\n",
                     read_string_attribute(root, "checkpoint"), read_int_attribute(root, "step"),
                     read_string_attribute(root, "input"),
                     read_string_attribute(root, "input_dataset"));
  const int64_t values = describe_tensors(root, "", out);
  out << fmt::format("  ({} values, checksums verified)\n", values);
}

// The last value of a column, "-" for an empty one: columns may differ in length (a job killed
// between two columns of a row, a damaged file), and `back()` of an empty one is undefined
// (it crashed inspect; seen while writing tests/fuzz).
std::string last_value(const std::vector<double>& column) {
  return column.empty() ? std::string("-") : fmt::format("{:.6g}", column.back());
}

void inspect_metrics(const H5File& file, std::ostream& out) {
  const hid_t root = file.id();
  out << fmt::format(
      "{}: ddptrain metrics, ddptrain {}, {} rank(s) on {} node(s), {} / {}, "
      "created {}\n",
      file.path(), read_string_attribute(root, "ddptrain_version"),
      read_int_attribute(root, "world_size"), read_int_attribute(root, "nodes"),
      read_string_attribute(root, "device"), read_string_attribute(root, "backend"),
      read_string_attribute(root, "created"));
  const H5Group train = H5Group::open(root, "train");
  std::vector<std::vector<double>> columns;
  for (const auto& name : MetricsWriter::train_columns()) {
    columns.push_back(H5Series::read_all(train.id(), name));
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
  const H5Group eval = H5Group::open(root, "eval");
  const std::vector<std::string> eval_names = list_members(eval.id());
  const std::vector<double> eval_steps = H5Series::read_all(eval.id(), "step");
  out << fmt::format("  /eval: {} rows", eval_steps.size());
  if (!eval_steps.empty()) {
    out << fmt::format(", last at step {}:", eval_steps.back());
    for (const auto& name : eval_names) {
      if (name == "step") continue;
      out << fmt::format(" {} {}", name, last_value(H5Series::read_all(eval.id(), name)));
    }
  }
  out << "\n";
}

}  // namespace

void inspect_file(const std::string& path, std::ostream& out) {
  const H5File file = H5File::open_read(path);
  try {
    if (has_object(file.id(), "predictions")) {
      inspect_predictions(file, out);
    } else if (has_attribute(file.id(), schema::kModelSignature)) {
      inspect_checkpoint(file, out);
    } else if (has_object(file.id(), "train")) {
      inspect_metrics(file, out);
    } else {
      throw DataError("not a ddptrain metrics, checkpoint or predictions file", Raised::kThisRank);
    }
  } catch (const Error& e) {
    throw DataError("'" + path + "': " + e.what(), Raised::kThisRank);
  }
}

}  // namespace ddpt
