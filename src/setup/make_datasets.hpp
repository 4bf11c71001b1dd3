// The datasets a deck's [data] section describes.
#pragma once

#include <memory>

#include "config/sections.hpp"
#include "data/dataset.hpp"
#include "data/synthetic_classification.hpp"

namespace ddpt {

struct DataSplits {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> val;  // null when the deck names no validation data
};

// The synthetic classification a deck describes ([data] and run.seed).
SyntheticClassificationSpec synthetic_spec_of(const DataConfig& data, int64_t seed);

// Every rank: opens (or generates) the training data and its validation split: named validation
// datasets, else the last data.val_fraction of the rows. DataError naming the file and object
// for a file that does not fit.
DataSplits make_datasets(const DataConfig& data, int64_t seed);

// What the deck's training data holds (task, sample shape, outputs), without reading any rows:
// enough to build the model for inference.
DatasetInfo deck_data_info(const DataConfig& data);

// The deck's kind of dataset read from another file with the deck's dataset names (for
// `ddptrain eval --input`): a synthetic deck reads an hdf5 file.
std::shared_ptr<const Dataset> open_dataset_file(const DataConfig& data, const std::string& path);

}  // namespace ddpt
