// The predictions file (`ddptrain predict`): every rank writes its rows of /predictions (and, for
// classification, /predicted_class) into one file, collectively, in input order. Staged: the file
// is written under a staging name, synced to the disk and renamed, so a failed run leaves any
// older file of that name untouched. Names in io/predictions_schema.hpp.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "comm/host_group.hpp"
#include "data/dataset.hpp"

namespace ddpt {

// The root attributes: where the predictions come from.
struct PredictionsSource {
  std::string checkpoint;     // as given; written as its canonical path
  int64_t step = 0;           // the checkpoint's step
  std::string input;          // the input file, as given; written as its absolute path
  std::string input_dataset;  // data.inputs
  Task task = Task::kClassification;
};

// Collective over `group`: writes `path` with `rows` rows of `outputs` columns, this rank's
// `predictions` ([n, outputs] float) at rows [first, first + n).
void write_predictions(const std::string& path, const PredictionsSource& source, int64_t rows,
                       int64_t first, const torch::Tensor& predictions, HostGroup& group);

}  // namespace ddpt
