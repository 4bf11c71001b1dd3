// The names in a predictions file (`ddptrain predict`) that its writer (io/predictions_writer.cpp)
// and `ddptrain inspect` share (share/doc/ddptrain/file-formats.md describes the file).
#pragma once

namespace ddpt::predictions_schema {

// Root attributes.
constexpr const char* kVersion = "ddptrain_version";
constexpr const char* kCheckpoint = "checkpoint";  // the checkpoint's canonical path
constexpr const char* kStep = "step";              // the checkpoint's step
constexpr const char* kInput = "input";            // the input file's absolute path
constexpr const char* kInputDataset = "input_dataset";
constexpr const char* kTask = "task";
constexpr const char* kWorldSize = "world_size";  // the ranks that wrote it

// Datasets.
constexpr const char* kPredictions = "predictions";         // [rows, outputs] float32
constexpr const char* kPredictedClass = "predicted_class";  // [rows] int64, classification only

}  // namespace ddpt::predictions_schema
