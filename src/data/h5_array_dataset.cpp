#include "data/h5_array_dataset.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "h5/h5_lock.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

bool is_integer(torch::ScalarType t) {
  return c10::isIntegralType(t, /*includeBool=*/false);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

DatasetInfo check_layout(const H5Dataset& inputs, const H5Dataset& targets,
                         int64_t classes_if_unset) {
  if (inputs.shape().size() < 2) {
    throw DataError(inputs.where() + " has shape " + shape_text(inputs.shape()) +
                        "; expected [samples, features...]",
                    Raised::kAllRanks);
  }
  if (targets.shape().empty() || targets.rows() != inputs.rows()) {
    throw DataError(targets.where() + " has shape " + shape_text(targets.shape()) + " but " +
                        inputs.where() + " has " + std::to_string(inputs.rows()) + " rows",
                    Raised::kAllRanks);
  }
  DatasetInfo info;
  info.sample_shape.assign(inputs.shape().begin() + 1, inputs.shape().end());
  if (is_integer(targets.dtype())) {
    if (targets.shape().size() != 1) {
      throw DataError(targets.where() + " holds integers of shape " + shape_text(targets.shape()) +
                          "; class labels must be 1-D [samples]",
                      Raised::kAllRanks);
    }
    info.task = Task::kClassification;
    info.outputs =
        targets.has_attribute("classes") ? targets.read_int_attribute("classes") : classes_if_unset;
    if (info.outputs < 2) {
      throw DataError(targets.where() + ": attribute 'classes' = " + std::to_string(info.outputs) +
                          " (need at least 2)",
                      Raised::kAllRanks);
    }
    return info;
  }
  if (targets.shape().size() > 2) {
    throw DataError(targets.where() + " has shape " + shape_text(targets.shape()) +
                        "; regression targets must be [samples] or [samples, outputs]",
                    Raised::kAllRanks);
  }
  info.task = Task::kRegression;
  info.outputs = targets.shape().size() == 2 ? targets.shape()[1] : 1;
  return info;
}

// Labels are read once at start in blocks of this many rows (8 MiB of int64): every label is
// checked before anything is written, in bounded memory however large the file.
constexpr int64_t kLabelScanRows = int64_t{1} << 20;

// Every rank reads the same labels, so every rank raises the same error: no rank trains on.
void check_labels(const H5Dataset& targets, int64_t classes) {
  for (int64_t first = 0; first < targets.rows(); first += kLabelScanRows) {
    const torch::Tensor labels =
        targets.read_range(first, std::min(kLabelScanRows, targets.rows() - first))
            .to(torch::kLong);
    const torch::Tensor outside = labels.lt(0).logical_or(labels.ge(classes));
    if (!outside.any().item<bool>()) continue;
    const int64_t bad = outside.nonzero()[0][0].item<int64_t>();
    throw DataError(fmt::format("{} row {}: label {} is outside [0, {}) (classes from the "
                                "'classes' attribute or data.classes)",
                                targets.where(), first + bad, labels[bad].item<int64_t>(), classes),
                    Raised::kAllRanks);
  }
}

}  // namespace

RowRequest plan_row_read(const torch::Tensor& indices, int64_t rows) {
  const torch::Tensor wanted = indices.to(torch::kLong).contiguous();
  auto [unique_rows, inverse] = torch::_unique(wanted, /*sorted=*/true, /*return_inverse=*/true);
  const int64_t* first = unique_rows.data_ptr<int64_t>();
  RowRequest request{std::vector<int64_t>(first, first + unique_rows.numel()), inverse};
  const auto& sorted = request.sorted_rows;
  if (!sorted.empty() && (sorted.front() < 0 || sorted.back() >= rows)) {
    throw Error(fmt::format("row {} requested of a dataset with {} rows",
                            sorted.front() < 0 ? sorted.front() : sorted.back(), rows),
                ExitCode::kInternal, Raised::kThisRank);
  }
  return request;
}

torch::Tensor read_rows(const H5Dataset& dataset, const RowRequest& request) {
  return dataset.read_rows(request.sorted_rows).index_select(0, request.order);
}

H5ArrayDataset::H5ArrayDataset(const std::string& path, const std::string& inputs,
                               const std::string& targets, int64_t classes_if_unset)
    : file_(H5File::open_read(path)),
      inputs_(H5Dataset::open(file_, inputs)),
      targets_(H5Dataset::open(file_, targets)),
      info_(check_layout(inputs_, targets_, classes_if_unset)) {
  if (info_.task == Task::kClassification) check_labels(targets_, info_.outputs);
}

Batch H5ArrayDataset::get(const torch::Tensor& indices) const {
  Batch batch;
  const Hdf5Lock lock;  // checkpoint.async may be writing a checkpoint on another thread
  const RowRequest request = plan_row_read(indices, inputs_.rows());
  batch.inputs = read_rows(inputs_, request).to(torch::kFloat);
  torch::Tensor targets = read_rows(targets_, request);
  if (info_.task == Task::kClassification) {
    batch.targets = targets.to(torch::kLong);
    const auto [low, high] = torch::aminmax(batch.targets);
    if (low.item<int64_t>() < 0 || high.item<int64_t>() >= info_.outputs) {
      const int64_t bad = (batch.targets < 0)
                              .logical_or(batch.targets >= info_.outputs)
                              .nonzero()[0][0]
                              .item<int64_t>();
      throw DataError(fmt::format("{} row {}: label {} is outside [0, {}) (classes from the "
                                  "'classes' attribute or data.classes)",
                                  targets_.where(), indices[bad].item<int64_t>(),
                                  batch.targets[bad].item<int64_t>(), info_.outputs),
                      Raised::kThisRank);
    }
  } else {
    batch.targets = targets.to(torch::kFloat).reshape({targets.size(0), info_.outputs});
  }
  return batch;
}

std::string H5ArrayDataset::describe() const {
  return fmt::format("{} ({}): {} {} {} -> {} {} {}{}", file_.path(), task_name(info_.task),
                     inputs_.name(), shape_text(inputs_.shape()), inputs_.stored_type(),
                     targets_.name(), shape_text(targets_.shape()), targets_.stored_type(),
                     info_.task == Task::kClassification
                         ? fmt::format(", {} classes", info_.outputs)
                         : std::string());
}

}  // namespace ddpt
