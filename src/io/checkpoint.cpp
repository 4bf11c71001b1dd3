#include "io/checkpoint.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "h5/h5_check.hpp"
#include "h5/h5_file.hpp"
#include "h5/h5_tensor.hpp"
#include "train/optimizer_state.hpp"
#include "util/check.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace ddpt {
namespace {

// Validation loss at the checkpoint's step, when the run evaluates (checkpoint.keep_best).
constexpr const char* kEvalLossAttribute = "eval_loss";

std::string checkpoint_name(int64_t step) {
  return fmt::format("step_{:08d}.h5", step);
}

// HDF5 names cannot hold '/'; parameter names use '.', which is fine as it is.
void write_group(hid_t file, const std::string& group_name, const std::vector<NamedTensor>& tensors,
                 bool writer) {
  H5Id group = create_group(file, group_name);
  for (const auto& t : tensors) write_tensor(group.get(), t.name, t.tensor, writer);
}

// Optimizer state names are "param/field": one subgroup per parameter.
void write_optimizer(hid_t file, const TrainingState& state, bool writer) {
  H5Id group = create_group(file, "optimizer");
  write_attribute(group.get(), "type", state.optimizer_type);
  std::string current;
  H5Id sub;
  for (const auto& t : export_optimizer_state(*state.optimizer, state.params)) {
    const auto slash = t.name.rfind('/');
    const std::string param = t.name.substr(0, slash);
    if (param != current) {
      sub = create_group(group.get(), param);
      current = param;
    }
    write_tensor(sub.get(), t.name.substr(slash + 1), t.tensor, writer);
  }
}

torch::Tensor rng_state_bytes() {
  return at::detail::getDefaultCPUGenerator().get_state();
}

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
      if (!has_attribute(f.id(), kEvalLossAttribute)) continue;
      const double loss = read_double_attribute(f.id(), kEvalLossAttribute);
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
void prune(const fs::path& dir, const CheckpointConfig& retention) {
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
  const fs::path staging = dir / ("." + link_name + ".tmp");
  fs::remove(staging);
  fs::create_symlink(name, staging);
  fs::rename(staging, link);  // rename(2) replaces the old link atomically
}

}  // namespace

std::string model_signature(const TrainingState& state) {
  std::string signature;
  auto add = [&](const std::vector<NamedTensor>& tensors) {
    for (const auto& t : tensors) {
      signature += fmt::format("{}:{}:{};", t.name, fmt::join(t.tensor.sizes(), "x"),
                               c10::toString(t.tensor.scalar_type()));
    }
  };
  add(state.params);
  add(state.buffers);
  return signature;
}

std::string save_checkpoint(const std::string& run_dir, int64_t step, int64_t epoch,
                            const TrainingState& state, MPI_Comm comm,
                            const CheckpointConfig& retention, std::optional<double> eval_loss) {
  int rank = 0;
  int size = 1;
  DDPT_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  DDPT_CHECK_MPI(MPI_Comm_size(comm, &size));
  const fs::path dir = fs::path(run_dir) / "checkpoints";
  if (rank == 0) fs::create_directories(dir);
  DDPT_CHECK_MPI(MPI_Barrier(comm));  // the directory exists before anyone opens the file

  const std::string name = checkpoint_name(step);
  const fs::path staging = dir / ("." + name + ".tmp");
  {
    H5File file = H5File::create(staging.string(), comm);
    const hid_t root = file.id();
    const bool writer = rank == 0;
    write_attribute(root, "format_version", kCheckpointFormatVersion);
    write_attribute(root, "step", step);
    write_attribute(root, "epoch", epoch);
    write_attribute(root, "world_size", static_cast<int64_t>(size));
    write_attribute(root, "model_signature", model_signature(state));
    write_attribute(root, "config", state.config);
    if (eval_loss) write_attribute(root, kEvalLossAttribute, *eval_loss);
    write_group(root, "model", state.params, writer);
    write_group(root, "buffers", state.buffers, writer);
    if (!state.ema.empty()) write_group(root, "ema", state.ema, writer);
    write_optimizer(root, state, writer);
    H5Id scheduler = create_group(root, "scheduler");
    write_attribute(scheduler.get(), "description", state.schedule);
    write_attribute(scheduler.get(), "step", step);
    H5Id loop = create_group(root, "loop");
    for (const LoopScalar& scalar : state.loop) {
      write_attribute(loop.get(), scalar.name, *scalar.value);
    }
    if (state.log_window)
      write_row(loop.get(), "log_window", state.log_window->to_row(), rank, size);
    H5Id rng = create_group(root, "rng");
    write_row(rng.get(), "torch_cpu", rng_state_bytes(), rank, size);
    H5Id data = create_group(root, "data");
    write_attribute(data.get(), "epoch", epoch);
    write_attribute(data.get(), "step", step);      // the sampler's position follows from the step
    write_attribute(root, "complete", int64_t{1});  // last: only a finished file says so
  }                                                 // collective close
  DDPT_CHECK_MPI(MPI_Barrier(comm));
  if (rank == 0) {
    fs::rename(staging, dir / name);
    point_link_at(dir, "latest", name);
    prune(dir, retention);
  }
  DDPT_CHECK_MPI(MPI_Barrier(comm));
  return (dir / name).string();
}

namespace {

H5File open_checkpoint(const std::string& path) {
  try {
    return H5File::open_read(path);
  } catch (const Error& e) {
    throw Error(std::string("checkpoint ") + e.what(), e.code(), e.raised(), e.where());
  }
}

// Checks that `root` is a complete checkpoint of this model and loads /model and /buffers.
void load_weights(hid_t root, const TrainingState& state) {
  if (!has_object(root, "model") || !has_attribute(root, "complete") ||
      read_int_attribute(root, "complete") != 1) {
    throw DataError("incomplete checkpoint", Raised::kAllRanks);
  }
  const std::string signature = read_string_attribute(root, "model_signature");
  if (signature != model_signature(state)) {
    throw DataError("written for another model (model_signature differs: file has '" +
                        signature.substr(0, 120) + "...')",
                    Raised::kAllRanks);
  }
  torch::NoGradGuard no_grad;
  auto load_group = [&](const std::string& group_name, const std::vector<NamedTensor>& tensors) {
    H5Id group = open_group(root, group_name);
    for (const auto& t : tensors) {
      t.tensor.copy_(read_tensor(group.get(), t.name).view_as(t.tensor));
    }
  };
  load_group("model", state.params);
  load_group("buffers", state.buffers);
}

}  // namespace

int64_t load_model_weights(const std::string& path, const std::vector<NamedTensor>& params,
                           const std::vector<NamedTensor>& buffers, bool prefer_ema) {
  const H5File file = open_checkpoint(path);
  try {
    TrainingState state;
    state.params = params;
    state.buffers = buffers;
    load_weights(file.id(), state);
    if (prefer_ema && has_object(file.id(), "ema")) {
      torch::NoGradGuard no_grad;
      H5Id ema = open_group(file.id(), "ema");
      for (const auto& p : params) {
        if (has_object(ema.get(), p.name)) {
          p.tensor.copy_(read_tensor(ema.get(), p.name).view_as(p.tensor));
        }
      }
    }
    return read_int_attribute(file.id(), "step");
  } catch (const Error& e) {
    throw e.in_context("checkpoint '" + path + "'");  // a one-rank error stays one rank's
  }
}

int64_t load_checkpoint(const std::string& path, const TrainingState& state, int rank,
                        int world_size) {
  const H5File file = open_checkpoint(path);
  try {
    const hid_t root = file.id();
    load_weights(root, state);
    torch::NoGradGuard no_grad;
    if (!state.ema.empty()) {
      // A checkpoint from a run without EMA starts the average at its weights.
      const bool saved = has_object(root, "ema");
      H5Id ema = saved ? open_group(root, "ema") : open_group(root, "model");
      for (const auto& t : state.ema) {
        t.tensor.copy_(read_tensor(ema.get(), t.name).view_as(t.tensor));
      }
    }
    H5Id optimizer = open_group(root, "optimizer");
    const std::string type = read_string_attribute(optimizer.get(), "type");
    if (type != state.optimizer_type) {
      throw DataError(
          "/optimizer was written by " + type + ", this run uses " + state.optimizer_type,
          Raised::kAllRanks);
    }
    import_optimizer_state(*state.optimizer, state.params, [&](const std::string& name) {
      const auto slash = name.rfind('/');
      const std::string param = name.substr(0, slash);
      if (!has_object(optimizer.get(), param)) return torch::Tensor();
      H5Id sub = open_group(optimizer.get(), param);
      const std::string field = name.substr(slash + 1);
      return has_object(sub.get(), field) ? read_tensor(sub.get(), field) : torch::Tensor();
    });
    if (has_object(root, "loop")) {
      H5Id loop = open_group(root, "loop");
      for (const LoopScalar& scalar : state.loop) {
        if (has_attribute(loop.get(), scalar.name)) {
          *scalar.value = read_double_attribute(loop.get(), scalar.name);
        }
      }
      if (state.log_window && has_object(loop.get(), "log_window")) {
        *state.log_window =
            LogWindow::from_rows(read_tensor(loop.get(), "log_window"), rank, world_size);
      }
    }
    // Per-rank RNG: restored when the world size is unchanged; otherwise each rank keeps the
    // generator its seed gave it (documented: resharded runs reseed per-rank randomness).
    if (read_int_attribute(root, "world_size") == world_size) {
      H5Id rng = open_group(root, "rng");
      const torch::Tensor rows = read_tensor(rng.get(), "torch_cpu");
      at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle to it
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rows[rank].clone());
    }
    return read_int_attribute(root, "step");
  } catch (const Error& e) {
    throw e.in_context("checkpoint '" + path + "'");  // a one-rank error stays one rank's
  }
}

namespace {

// A checkpoint file that opens and says it is complete (the attribute written last).
bool is_complete(const fs::path& file) {
  try {
    const H5File f = H5File::open_read(file.string());
    return has_attribute(f.id(), "complete") && read_int_attribute(f.id(), "complete") == 1;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

std::string latest_checkpoint(const std::string& run_dir) {
  const fs::path dir = fs::path(run_dir) / "checkpoints";
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
