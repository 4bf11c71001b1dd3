// Checkpoints: run.dir/checkpoints/step_XXXXXXXX.h5; the names inside are in checkpoint_schema.hpp.
//
// Written collectively through the MPI-IO driver: every rank creates the same objects in the same
// order; replicated tensors (model, buffers, optimizer state) come from rank 0, per-rank state
// (the RNG, the metrics row in progress) from each rank into its own row. Every dataset carries the
// Fletcher32 checksum. The file is written under a temporary name, closed, renamed, and only then
// does checkpoints/latest (a symbolic link) move to it, atomically: a reader never sees a
// half-written checkpoint.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "comm/host_group.hpp"
#include "io/state_snapshot.hpp"
#include "state/checkpointed.hpp"
#include "util/named_tensor.hpp"

namespace ddpt {

// What a checkpoint holds: the model, which every checkpoint has and inference needs alone, and
// the rest of the training state as registered parts (state/checkpointed.hpp).
struct CheckpointContents {
  std::vector<NamedTensor> params;   // every parameter (frozen ones too), registration order
  std::vector<NamedTensor> buffers;  // model buffers
  std::string config;                // the resolved deck, for the record
  const CheckpointRegistry* state = nullptr;  // optimizer, scaler, RNG, ...; null: none
  // ZeRO-3: the trainable parameters, which no rank holds whole, each rank's slices written and
  // read by this part (the params above then only name them, for the signature); null: none.
  CheckpointedWeights* weights = nullptr;
};

// "step_00000042.h5": the file name of the checkpoint of a step.
std::string checkpoint_file_name(int64_t step);
// Which checkpoints a run keeps (checkpoint.keep, checkpoint.keep_best).
struct Retention {
  int64_t keep = 1;        // the newest this many
  bool keep_best = false;  // and the one with the lowest validation loss
};

// RUN_DIR/checkpoints: where a run's checkpoints and the links latest and best are.
std::filesystem::path checkpoints_dir(const std::string& run_dir);

// "name:shape:dtype;..." of the parameters and buffers: equal signatures load into each other.
std::string model_signature(const std::vector<NamedTensor>& params,
                            const std::vector<NamedTensor>& buffers);

// Collective over `group`. Writes the checkpoint of `step` (optimizer steps done), with the
// validation loss at that step if given, then keeps the retention.keep newest (and with
// retention.keep_best the one with the lowest validation loss, linked as checkpoints/best).
// Returns the final path.
std::string save_checkpoint(const std::string& run_dir, int64_t step, int64_t epoch,
                            const CheckpointContents& contents, HostGroup& group,
                            const Retention& retention,
                            std::optional<double> eval_loss = std::nullopt);

// Every rank: what the checkpoint of `step` holds, as calls on `root` (the file's root group): its
// attributes, the model, every registered part, and last the attribute saying it is complete.
void save_state(StateWriter& root, int64_t step, int64_t epoch, const CheckpointContents& contents,
                int world_size, std::optional<double> eval_loss = std::nullopt);
// Collective over `group`: writes `snapshot` (made by save_state) as the checkpoint of `step`, then
// moves checkpoints/latest to it and prunes as save_checkpoint does. Safe on a thread other than
// the training thread (checkpoint.async): its HDF5 calls hold the HDF5 lock; `group` must then be
// one no other thread uses (HostGroup::duplicate).
std::string write_checkpoint(const std::string& run_dir, int64_t step,
                             const StateSnapshot& snapshot, HostGroup& group,
                             const Retention& retention);

// Every rank: loads `path` into `contents` and returns the step it was written at. Any problem
// (missing object, checksum, other model) is an error naming the file and the object (exit code
// 3); a checksum error is this rank's alone (Raised::kThisRank), a file of another model every
// rank's.
int64_t load_checkpoint(const std::string& path, const CheckpointContents& contents, int rank,
                        int world_size);

// Every rank: loads only the model (parameters and buffers) of `path`, for inference, and returns
// its step; with `prefer_ema`, parameters that have a moving average in /ema get it instead.
// Same errors as load_checkpoint.
// `weights` (ZeRO-3): reads the parameters it holds, each rank its slices.
int64_t load_model_weights(const std::string& path, const std::vector<NamedTensor>& params,
                           const std::vector<NamedTensor>& buffers, bool prefer_ema = false,
                           CheckpointedWeights* weights = nullptr);

// The checkpoint to continue run.dir from ("" if none): where checkpoints/latest points, or
// without that link the newest step file that is complete.
std::string latest_checkpoint(const std::string& run_dir);

}  // namespace ddpt
