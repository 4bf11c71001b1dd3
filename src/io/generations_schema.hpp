// The names in a generations file (`ddptrain generate`) that its writer
// (io/generations_writer.cpp) and `ddptrain inspect` share (share/doc/ddptrain/file-formats.md
// describes the file).
#pragma once

namespace ddpt::generations_schema {

// Root attributes: where the tokens come from, and every setting that chose them.
constexpr const char* kVersion = "ddptrain_version";
constexpr const char* kKind = "kind";              // "generations"
constexpr const char* kCheckpoint = "checkpoint";  // the checkpoint's canonical path
constexpr const char* kStep = "step";              // the checkpoint's step
constexpr const char* kInput = "input";            // the prompts file's absolute path
constexpr const char* kMaxNewTokens = "max_new_tokens";
constexpr const char* kTemperature = "temperature";
constexpr const char* kTopK = "top_k";
constexpr const char* kTopP = "top_p";
constexpr const char* kSeed = "seed";
constexpr const char* kStop = "stop";  // the token ids, as generate.stop gave them
constexpr const char* kBatchSize = "batch_size";
constexpr const char* kWorldSize = "world_size";  // the ranks that generated it

// Datasets, in the prompts' order.
constexpr const char* kTokens = "tokens";      // [new tokens] int64, every row's one after another
constexpr const char* kOffsets = "offsets";    // [rows + 1] int64: row i is tokens[o[i]:o[i+1]]
constexpr const char* kFinish = "finish";      // [rows] int64: 0 max_new_tokens, 1 stop, 2 context
constexpr const char* kLogprobs = "logprobs";  // [new tokens] float32, of each chosen token

}  // namespace ddpt::generations_schema
