#include "io/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "h5/h5_file.hpp"
#include "h5/h5_lock.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_state.hpp"
#include "io/staged_file.hpp"
#include "io/staged_h5_file.hpp"
#include "state/checkpointed.hpp"
#include "util/check.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace ddpt {
namespace {

namespace schema = checkpoint_schema;

// Beyond the tensor data, a checkpoint holds its groups, datasets and attributes (the resolved
// deck among them): about 93 KiB beside the quick-start model's 0.98 MiB of tensors.
constexpr int64_t kCheckpointMetadataBytes = int64_t{256} << 10;

std::vector<fs::path> checkpoint_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && entry.path().extension() == ".h5")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // zero-padded steps: name order is step order
  return files;
}

// The checkpoint with the lowest eval_loss attribute among `files` (empty path if none has one).
fs::path best_of(const std::vector<fs::path>& files) {
  fs::path best;
  double best_loss = 0;
  for (const auto& file : files) {
    try {
      const H5File f = H5File::open_read(file.string());
      if (!f.has_attribute(schema::kEvalLoss)) continue;
      const double loss = f.read_double_attribute(schema::kEvalLoss);
      if (best.empty() || loss < best_loss) {
        best = file;
        best_loss = loss;
      }
    } catch (const Error&) {
      // A damaged older checkpoint cannot be the best; pruning treats it like any other.
    }
  }
  return best;
}

void point_link_at(const fs::path& dir, const std::string& link_name, const std::string& name);

// Keeps the `keep` newest checkpoints, and with keep_best the one with the lowest validation loss
// (checkpoints/best points at it).
void prune(const fs::path& dir, const Retention& retention) {
  const std::vector<fs::path> files = checkpoint_files(dir);
  const fs::path best = retention.keep_best ? best_of(files) : fs::path();
  if (!best.empty()) point_link_at(dir, "best", best.filename().string());
  const size_t keep = static_cast<size_t>(retention.keep);
  for (size_t i = 0; i + keep < files.size(); ++i) {
    if (files[i] != best) fs::remove(files[i]);
  }
}

void point_link_at(const fs::path& dir, const std::string& link_name, const std::string& name) {
  const fs::path link = dir / link_name;
  fs::remove(staging_path(link));
  fs::create_symlink(name, staging_path(link));
  publish_staged(link);  // rename(2) replaces the old link atomically
}

}  // namespace

std::string checkpoint_file_name(int64_t step) {
  return fmt::format("step_{:08d}.h5", step);
}

fs::path checkpoints_dir(const std::string& run_dir) {
  return fs::path(run_dir) / "checkpoints";
}

std::string model_signature(const std::vector<NamedTensor>& params,
                            const std::vector<NamedTensor>& buffers) {
  std::string signature;
  for (const auto* tensors : {&params, &buffers}) {
    for (const auto& t : *tensors) {
      signature += fmt::format("{}:{}:{};", t.name, fmt::join(t.tensor.sizes(), "x"),
                               c10::toString(t.tensor.scalar_type()));
    }
  }
  return signature;
}

namespace {

StagedOutput checkpoint_output(const fs::path& path) {
  return {fmt::format("checkpoint '{}'", path.string()), "the previous checkpoints are kept"};
}

// Collective: the checkpoint `path`, from `snapshot`, written to its staging file. HDF5 calls
// hold the HDF5 lock (they may run on the background writer while the training thread reads
// data or writes metrics). A rank whose part fails (a full disk, a quota, an I/O error) while the
// others wait for it in HDF5's collective calls ends the job (write_staged_h5).
void write_checkpoint_file(const fs::path& path, const StateSnapshot& snapshot, HostGroup& group) {
  write_staged_h5(path, group.comm(), checkpoint_output(path), [&](H5File& file) {
    // Opening and closing the root group are HDF5 calls too: one of them unlocked, racing the
    // training thread's metrics row, corrupted HDF5 1.14's global API context ("no VOL object
    // wrap context") and aborted or hung within a few runs. So the root is released under the
    // lock however the write ends.
    const auto release_locked = [](H5StateWriter* root) {
      const Hdf5Lock lock;
      delete root;
    };
    std::unique_ptr<H5StateWriter, decltype(release_locked)> root(nullptr, release_locked);
    {
      const Hdf5Lock lock;
      root.reset(new H5StateWriter(file.open_group("/"), group.rank(), group.size()));
    }
    snapshot.replay(*root);  // locks per object
  });
}

}  // namespace

void save_state(StateWriter& root, int64_t step, int64_t epoch, const CheckpointContents& contents,
                int world_size, std::optional<double> eval_loss) {
  root.scalar(schema::kFormatVersionAttribute, schema::kFormatVersion);
  root.scalar(schema::kStep, step);
  root.scalar(schema::kEpoch, epoch);
  root.scalar(schema::kWorldSize, static_cast<int64_t>(world_size));
  root.scalar(schema::kModelSignature, model_signature(contents.params, contents.buffers));
  root.scalar(schema::kConfig, contents.config);
  if (eval_loss) root.scalar(schema::kEvalLoss, *eval_loss);
  const auto model = root.group(schema::kModel);
  for (const auto& t : contents.params) {
    if (!contents.weights || !contents.weights->holds(t.name)) model->tensor(t.name, t.tensor);
  }
  if (contents.weights) contents.weights->save(*model);
  const auto buffers = root.group(schema::kBuffers);
  for (const auto& t : contents.buffers) buffers->tensor(t.name, t.tensor);
  if (contents.state) {
    for (const Checkpointed* part : contents.state->parts()) part->save(root);
  }
  root.scalar(schema::kComplete, int64_t{1});  // last: only a finished file says so
}

std::string write_checkpoint(const std::string& run_dir, int64_t step,
                             const StateSnapshot& snapshot, HostGroup& group,
                             const Retention& retention) {
  const bool rank0 = group.rank() == 0;
  const fs::path dir = checkpoints_dir(run_dir);
  if (rank0) fs::create_directories(dir);
  group.barrier("checkpoints directory made");  // before anyone opens the file

  const fs::path path = dir / checkpoint_file_name(step);
  // Its space is checked first: a full disk or an exceeded quota is then one clean error on every
  // rank (exit 3), not a failure inside the collective writes.
  const StagedOutput output = checkpoint_output(path);
  const int64_t data = snapshot.file_data_bytes(group.size());
  check_staged_space(path, data + data / 32 + kCheckpointMetadataBytes, group, output);
  write_checkpoint_file(path, snapshot, group);
  // On the disk before it is published, so `latest` never names a file a crash could still take
  // away. Synchronous writes take this time in their stall (about what dd conv=fsync of the same
  // bytes takes); checkpoint.async takes it in the background. Collective: every rank has synced
  // after it.
  sync_and_publish(path, group, output.description, output.kept);
  if (rank0) {
    point_link_at(dir, "latest", path.filename().string());
    const Hdf5Lock lock;  // keep_best reads the kept files
    prune(dir, retention);
  }
  group.barrier("checkpoint published");
  return path.string();
}

std::string save_checkpoint(const std::string& run_dir, int64_t step, int64_t epoch,
                            const CheckpointContents& contents, HostGroup& group,
                            const Retention& retention, std::optional<double> eval_loss) {
  StateSnapshot snapshot(group.rank(), /*copy=*/false);  // replayed right away: nothing copied
  save_state(snapshot, step, epoch, contents, group.size(), eval_loss);
  return write_checkpoint(run_dir, step, snapshot, group, retention);
}

namespace {

H5File open_checkpoint(const std::string& path) {
  try {
    return H5File::open_read(path);
  } catch (const Error& e) {
    throw Error(std::string("checkpoint ") + e.what(), e.code(), e.raised(), e.where());
  }
}

// The checkpoint's root as a state reader, as every part of the training state reads it. The
// weights are replicated tensors: no rank or world size plays a part in reading them.
H5StateReader root_reader(const H5File& file, int rank, int world_size, int64_t saved_world_size) {
  return H5StateReader(file.open_group("/"), rank, world_size, saved_world_size);
}
H5StateReader weights_reader(const H5File& file) {
  return root_reader(file, 0, 1, 1);
}

// Checks that `file` is a complete checkpoint of this model and loads /model and /buffers through
// the state reader.
void load_weights(const H5File& file, const std::vector<NamedTensor>& params,
                  const std::vector<NamedTensor>& buffers, CheckpointedWeights* weights = nullptr) {
  if (!file.has(schema::kModel) || !schema::is_complete(file)) {
    throw DataError("incomplete checkpoint", Raised::kAllRanks);
  }
  const std::string signature = file.read_string_attribute(schema::kModelSignature);
  if (signature != model_signature(params, buffers)) {
    throw DataError("written for another model (model_signature differs: file has '" +
                        signature.substr(0, 120) + "...')",
                    Raised::kAllRanks);
  }
  torch::NoGradGuard no_grad;
  const H5StateReader root = weights_reader(file);
  auto load_group = [&](const char* group_name, const std::vector<NamedTensor>& tensors) {
    const std::unique_ptr<StateReader> group = root.group(group_name);
    for (const auto& t : tensors) {
      if (weights && weights->holds(t.name)) continue;
      t.tensor.copy_(
          stored_as(group->tensor(t.name), t.tensor, std::string(group_name) + "/" + t.name));
    }
  };
  load_group(schema::kModel, params);
  load_group(schema::kBuffers, buffers);
  if (weights) weights->load(*root.group(schema::kModel));
}

}  // namespace

bool checkpoint_schema::is_complete(const H5Node& root) {
  return root.has_attribute(kComplete) && root.read_int_attribute(kComplete) == 1;
}

int64_t load_model_weights(const std::string& path, const std::vector<NamedTensor>& params,
                           const std::vector<NamedTensor>& buffers, bool prefer_ema,
                           CheckpointedWeights* weights) {
  const H5File file = open_checkpoint(path);
  try {
    load_weights(file, params, buffers, weights);
    const H5StateReader root = weights_reader(file);
    if (prefer_ema && root.has(schema::kEma)) {
      torch::NoGradGuard no_grad;
      const std::unique_ptr<StateReader> ema = root.group(schema::kEma);
      if (weights) weights->load_present(*ema);
      for (const auto& p : params) {
        if (weights && weights->holds(p.name)) continue;
        if (ema->has(p.name)) {
          p.tensor.copy_(stored_as(ema->tensor(p.name), p.tensor, "ema/" + p.name));
        }
      }
    }
    return root.int_scalar(schema::kStep);
  } catch (const Error& e) {
    throw e.in_context("checkpoint '" + path + "'");  // a one-rank error stays one rank's
  }
}

int64_t load_checkpoint(const std::string& path, const CheckpointContents& contents, int rank,
                        int world_size) {
  const H5File file = open_checkpoint(path);
  try {
    load_weights(file, contents.params, contents.buffers, contents.weights);
    if (contents.state) {
      const H5StateReader root =
          root_reader(file, rank, world_size, file.read_int_attribute(schema::kWorldSize));
      for (Checkpointed* part : contents.state->parts()) part->load(root);
    }
    return file.read_int_attribute(schema::kStep);
  } catch (const Error& e) {
    throw e.in_context("checkpoint '" + path + "'");  // a one-rank error stays one rank's
  }
}

namespace {

// A checkpoint file that opens and says it is complete (the attribute written last).
bool is_complete(const fs::path& file) {
  try {
    const H5File f = H5File::open_read(file.string());
    return checkpoint_schema::is_complete(f);
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::string latest_checkpoint(const std::string& run_dir) {
  const fs::path dir = checkpoints_dir(run_dir);
  std::error_code ec;
  if (fs::exists(dir / "latest", ec)) return fs::canonical(dir / "latest", ec).string();
  // No link (the directory was copied without symbolic links, say): the newest complete file.
  if (!fs::is_directory(dir, ec)) return "";
  const std::vector<fs::path> files = checkpoint_files(dir);
  for (auto file = files.rbegin(); file != files.rend(); ++file) {
    if (is_complete(*file)) return file->string();
  }
  return "";
}

}  // namespace ddpt
