#include "setup/make_datasets.hpp"

#include <cmath>
#include <stdexcept>

#include "data/h5_array_dataset.hpp"
#include "data/row_subset.hpp"
#include "data/synthetic_classification.hpp"
#include "data/synthetic_images.hpp"
#include "data/synthetic_regression.hpp"
#include "data/synthetic_tokens.hpp"
#include "data/token_stream.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

int64_t stride_of(const DataConfig& data) {
  return data.stride > 0 ? data.stride : data.block;
}

std::shared_ptr<const Dataset> open_tokens(const DataConfig& data, const std::string& path,
                                           const std::string& name) {
  return std::make_shared<TokenStream>(path, name, data.block, stride_of(data), data.vocab);
}

// Splits off the last val_fraction of `all` for validation.
DataSplits split_tail(std::shared_ptr<const Dataset> all, double val_fraction) {
  if (val_fraction <= 0) return {std::move(all), nullptr};
  const int64_t rows = all->size();
  const auto held_out = static_cast<int64_t>(std::floor(static_cast<double>(rows) * val_fraction));
  if (held_out < 1 || held_out >= rows) {
    throw ConfigError("option 'data.val_fraction' = " + std::to_string(val_fraction) +
                      " leaves no rows for " + (held_out < 1 ? "validation" : "training") +
                      " out of " + std::to_string(rows));
  }
  auto train = std::make_shared<RowSubset>(all, 0, rows - held_out, "training");
  auto val = std::make_shared<RowSubset>(all, rows - held_out, held_out, "validation");
  return {std::move(train), std::move(val)};
}

}  // namespace

SyntheticClassificationSpec synthetic_spec_of(const DataConfig& data, int64_t seed) {
  SyntheticClassificationSpec spec;
  spec.samples = data.samples;
  spec.features = data.features;
  spec.classes = data.classes;
  spec.teacher_hidden = data.teacher_hidden;
  spec.seed = seed;
  return spec;
}

DataSplits make_datasets(const DataConfig& data, int64_t seed) {
  switch (data.type) {
    case DataType::kSynthetic:
      return split_tail(std::make_shared<SyntheticClassification>(synthetic_spec_of(data, seed)),
                        data.val_fraction);
    case DataType::kSyntheticRegression: {
      const TeacherSpec spec{data.samples, data.features, data.outputs, data.teacher_hidden, seed};
      return split_tail(std::make_shared<SyntheticRegression>(spec), data.val_fraction);
    }
    case DataType::kSyntheticImages: {
      const SyntheticImagesSpec spec{data.samples, data.channels, data.image_size, data.classes,
                                     seed};
      return split_tail(std::make_shared<SyntheticImages>(spec), data.val_fraction);
    }
    case DataType::kSyntheticTokens:
      return split_tail(std::make_shared<SyntheticTokens>(data.samples, data.block, stride_of(data),
                                                          data.vocab, seed),
                        data.val_fraction);
    case DataType::kHdf5: {
      auto train =
          std::make_shared<H5ArrayDataset>(data.path, data.inputs, data.targets, data.classes);
      if (data.val_inputs.empty()) return split_tail(std::move(train), data.val_fraction);
      auto val = std::make_shared<H5ArrayDataset>(data.path, data.val_inputs, data.val_targets,
                                                  data.classes);
      return {std::move(train), std::move(val)};
    }
    case DataType::kTokens: {
      auto train = open_tokens(data, data.path, data.tokens);
      if (data.val_tokens.empty()) return split_tail(std::move(train), data.val_fraction);
      return {std::move(train), open_tokens(data, data.path, data.val_tokens)};
    }
  }
  throw std::logic_error("unhandled data.type");
}

DatasetInfo deck_data_info(const DataConfig& data) {
  switch (data.type) {
    case DataType::kSynthetic:
      return {Task::kClassification, {data.features}, data.classes};
    case DataType::kSyntheticRegression:
      return {Task::kRegression, {data.features}, data.outputs};
    case DataType::kSyntheticImages:
      return {
          Task::kClassification, {data.channels, data.image_size, data.image_size}, data.classes};
    case DataType::kSyntheticTokens:
      return {Task::kNextToken, {data.block}, data.vocab};
    case DataType::kHdf5:
    case DataType::kTokens:
      return open_dataset_file(data, data.path)->info();  // the file says
  }
  throw std::logic_error("unhandled data.type");
}

std::shared_ptr<const Dataset> open_dataset_file(const DataConfig& data, const std::string& path) {
  if (data.type == DataType::kTokens) return open_tokens(data, path, data.tokens);
  return std::make_shared<H5ArrayDataset>(path, data.inputs, data.targets, data.classes);
}

}  // namespace ddpt
