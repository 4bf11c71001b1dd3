// The names in metrics.h5 that its writer (io/metrics_writer.cpp) and `ddptrain inspect` share
// (share/doc/ddptrain/file-formats.md describes the file). The columns of each group are
// MetricsWriter's (train_columns, eval_columns).
#pragma once

namespace ddpt::metrics_schema {

// Root attributes.
constexpr const char* kVersion = "ddptrain_version";
constexpr const char* kCreated = "created";  // UTC, ISO 8601
constexpr const char* kWorldSize = "world_size";
constexpr const char* kNodes = "nodes";
constexpr const char* kDevice = "device";
constexpr const char* kBackend = "backend";
constexpr const char* kConfig = "config";  // the resolved deck
constexpr const char* kTask = "task";
constexpr const char* kResumedAtStep = "resumed_at_step";  // only in a resumed run's file

// Groups: one series per column, the rows of a group aligned by index.
constexpr const char* kTrain = "train";  // one row per log.every steps
constexpr const char* kEval = "eval";    // one row per evaluation
constexpr const char* kStep = "step";    // the first column of both
// Runs of more than one rank: at each /train row, its step (kStep) and every rank's forward +
// backward seconds per step ([rows, ranks]).
constexpr const char* kRanks = "ranks";
constexpr const char* kComputeS = "compute_s";

}  // namespace ddpt::metrics_schema
