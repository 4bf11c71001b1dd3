// model.init = PATH: the weights a run starts from, loaded before step 1 (the optimizer starts
// fresh, from step 0). PATH is a safetensors file, a directory holding model.safetensors or
// Hugging Face's shards and model.safetensors.index.json (io/safetensors_index.hpp), or a
// ddptrain checkpoint (.h5).
//
// The built-in GPT reads GPT-2's layout, as published and as `ddptrain export` writes it: names
// with or without the `transformer.` prefix, the four Conv1D weights per block stored [in, out]
// (transposed here), no lm_head when tied (one in the file is ignored), lm_head when untied, the
// buffers `.attn.bias` and `.attn.masked_bias` skipped; F32, F16 or BF16 values; a vocabulary
// smaller than model.vocab padded with rows of zeros (GPT-2's 50257 in a model of 50304). Other
// models read their own parameter and buffer names. A tensor the model has and the file lacks,
// or the other way round, or of another shape, is an error naming it (exit 3), unless
// model.init_skip names it.
//
// Under ZeRO-3 (open_initial_weights) the file is checked against the model the same way, and
// each rank then reads only the byte ranges of the parameters' pieces it keeps, as the trainer
// shards them (models/parameter_source.hpp): a piece of a tensor stored as the model keeps it is
// one range; a piece of a GPT-2 Conv1D weight (stored transposed) is one run per file row, over
// the band of the model's rows the piece touches.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "models/model.hpp"
#include "models/parameter_source.hpp"

namespace ddpt {

// Loads `path` into `model` (on the host, before it is placed or sharded); every rank reads the
// file itself. `gpt`: the built-in GPT's layout rules above. `skip` (model.init_skip): globs on
// the model's tensor names left as initialised: not required in the file, not read from it.
// DataError (exit 3) naming the file; ConfigError (exit 2) for a glob that matches nothing.
// Returns the bytes of tensor data this process read (safetensors; nullopt for a checkpoint).
std::optional<int64_t> load_initial_weights(const std::string& path, Model& model, bool gpt,
                                            const std::string& skip = "");

struct MatchedWeights;  // the files, and which of their tensors is which of the model's

// model.init (or a safetensors --checkpoint) under ZeRO-3: the parameters' values, read a piece at
// a time as they are sharded.
class InitialWeightsSource final : public ParameterSource {
 public:
  InitialWeightsSource(std::unique_ptr<MatchedWeights> weights, bool gpt);
  ~InitialWeightsSource() override;
  InitialWeightsSource(const InitialWeightsSource&) = delete;
  InitialWeightsSource& operator=(const InitialWeightsSource&) = delete;

  bool holds(const std::string& name) const override;
  void read(const std::string& name, int64_t first, torch::Tensor out) override;
  // Bytes of tensor data this process has read (the buffers' included), and the file's total.
  int64_t bytes_read() const;
  int64_t bytes_in_files() const;
  // Rank 0's line: what this process read of the files, in how long.
  void log_read() const;

 private:
  std::unique_ptr<MatchedWeights> weights_;
  bool gpt_;
  double seconds_ = 0;  // spent reading pieces
};

// model.init under ZeRO-3: `path` (a safetensors file or directory) checked against `model` as
// load_initial_weights does, the model's buffers read whole, its parameters left to the trainer,
// which reads each rank's pieces from the source returned. A ddptrain checkpoint is ConfigError
// (exit 2): export it to safetensors first.
std::unique_ptr<InitialWeightsSource> open_initial_weights(const std::string& path, Model& model,
                                                           bool gpt, const std::string& skip = "");

}  // namespace ddpt
