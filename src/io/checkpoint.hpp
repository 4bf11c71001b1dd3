// Checkpoints: run.dir/checkpoints/step_XXXXXXXX.h5 (DESIGN.md, "Checkpoint").
//
// Written collectively through the MPI-IO driver: every rank creates the same objects in the same
// order; replicated tensors (model, buffers, optimizer state) come from rank 0, per-rank state
// (the RNG) from each rank into its own row. Every dataset carries the Fletcher32 checksum. The
// file is written under a temporary name, closed, renamed, and only then does checkpoints/latest
// (a symbolic link) move to it, atomically: a reader never sees a half-written checkpoint.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "train/log_window.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

constexpr int64_t kCheckpointFormatVersion = 1;

// A number of the training loop that a resumed run must continue from (the loss scale, the
// spike guard's running mean, the early-stopping counter), by reference to where it lives.
struct LoopScalar {
  std::string name;
  double* value;
};

// What a checkpoint holds, by reference to the live objects it is saved from or loaded into.
struct TrainingState {
  std::vector<NamedTensor> params;   // trainable parameters, registration order
  std::vector<NamedTensor> buffers;  // model buffers
  torch::optim::Optimizer* optimizer = nullptr;
  std::string optimizer_type;       // "sgd" | "adamw": a checkpoint loads only into the same kind
  std::string config;               // the resolved deck, for the record
  std::string schedule;             // the learning rate schedule, for the record (a function of the
                                    // step: a resumed run needs nothing else to continue it)
  std::vector<NamedTensor> ema;     // moving averages of the trainable parameters (may be empty)
  std::vector<LoopScalar> loop;     // saved as attributes of /loop; missing ones keep their value
  LogWindow* log_window = nullptr;  // per rank, /loop/log_window; absent in old files: empty
};

// "name:shape:dtype;..." of the parameters and buffers: equal signatures load into each other.
std::string model_signature(const TrainingState& state);

// Collective over `comm`. Writes the checkpoint of `step` (optimizer steps done), with the
// validation loss at that step if given, then keeps the retention.keep newest (and with
// retention.keep_best the one with the lowest validation loss, linked as checkpoints/best).
// Returns the final path.
std::string save_checkpoint(const std::string& run_dir, int64_t step, int64_t epoch,
                            const TrainingState& state, MPI_Comm comm,
                            const CheckpointConfig& retention,
                            std::optional<double> eval_loss = std::nullopt);

// Every rank: loads `path` into `state` and returns the step it was written at. Any problem
// (missing object, checksum, other model) is an error naming the file and the object (exit code
// 3); a checksum error is this rank's alone (Raised::kThisRank), a file of another model every
// rank's.
int64_t load_checkpoint(const std::string& path, const TrainingState& state, int rank,
                        int world_size);

// Every rank: loads only the model (parameters and buffers) of `path`, for inference, and returns
// its step; with `prefer_ema`, parameters that have a moving average in /ema get it instead.
// Same errors as load_checkpoint.
int64_t load_model_weights(const std::string& path, const std::vector<NamedTensor>& params,
                           const std::vector<NamedTensor>& buffers, bool prefer_ema = false);

// The checkpoint to continue run.dir from ("" if none): where checkpoints/latest points, or
// without that link the newest step file that is complete.
std::string latest_checkpoint(const std::string& run_dir);

}  // namespace ddpt
