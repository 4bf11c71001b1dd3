// The names in a checkpoint file that the writer, the loaders and `ddptrain inspect` share. The
// parts of the training state name their own groups (state/checkpointed.hpp); these are the
// checkpoint's own: root attributes and the model's groups.
#pragma once

#include <cstdint>

#include "h5/h5_node.hpp"

namespace ddpt::checkpoint_schema {

constexpr int64_t kFormatVersion = 1;

// Root attributes.
constexpr const char* kFormatVersionAttribute = "format_version";
constexpr const char* kStep = "step";
constexpr const char* kEpoch = "epoch";
constexpr const char* kWorldSize = "world_size";
constexpr const char* kModelSignature = "model_signature";
constexpr const char* kConfig = "config";
constexpr const char* kEvalLoss = "eval_loss";  // with checkpoint.keep_best: the validation loss
constexpr const char* kComplete = "complete";   // written last, = 1: the file is whole

// Groups.
constexpr const char* kModel = "model";
constexpr const char* kBuffers = "buffers";
constexpr const char* kEma = "ema";

// Whether `root` (an open checkpoint file) says it is complete: the attribute written last is 1.
bool is_complete(const H5Node& root);

}  // namespace ddpt::checkpoint_schema
