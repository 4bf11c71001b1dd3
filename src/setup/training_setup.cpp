#include "setup/training_setup.hpp"

#include <fmt/ranges.h>

#include <cstdlib>

#include "comm/make_communicator.hpp"
#include "models/cpu_convolutions.hpp"
#include "run/batch_size_search.hpp"
#include "setup/hang_watch.hpp"
#include "setup/initial_weights.hpp"
#include "setup/make_model.hpp"
#include "setup/memory_check.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "setup/test_faults.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

// train.deterministic: LibTorch's deterministic algorithms, on every device.
void make_deterministic() {
  // cuBLAS is deterministic only with a fixed workspace; LibTorch refuses the first GEMM on a GPU
  // without this setting. Read when the first cuBLAS handle is made, so set it before.
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, false);
}

// Evaluation needs validation data: a deck that asks for it without naming any is wrong.
void check_validation_split(const Config& config, const DataSplits& data) {
  if (data.val) return;
  const char* wanted = config.eval.every > 0         ? "eval.every"
                       : config.checkpoint.keep_best ? "checkpoint.keep_best"
                                                     : nullptr;
  if (wanted) {
    throw ConfigError(std::string("option '") + wanted +
                      "' needs validation data: set data.val_fraction, or name validation "
                      "datasets (data.val_inputs/val_targets, data.val_tokens)");
  }
}

// The data and the model, memory checked before anything large is allocated: synthetic data are
// made in memory from the deck alone, so before make_datasets; a data file is read batch by
// batch, so after it, from the shape make_datasets read (not opening the file a second time).
// What each rank read of model.init's file, on rank 0's output: without ZeRO-3 every rank reads
// the whole file itself; under ZeRO-3 its own slices (of `file_bytes` of tensor data in all).
void report_bytes_read(std::optional<int64_t> bytes, HostGroup& group,
                       std::optional<int64_t> file_bytes = std::nullopt) {
  if (!bytes || group.size() == 1) return;
  std::vector<std::string> each;
  for (const double b : group.all_gather("model.init's bytes read",
                                         std::vector<double>{static_cast<double>(*bytes)})) {
    each.push_back(human_bytes(static_cast<int64_t>(b)));
  }
  spdlog::info("weights: read by each rank: {}{}", fmt::join(each, ", "),
               file_bytes ? " of " + human_bytes(*file_bytes) : "");
}

// Under ZeRO-3, once the trainer has sharded the model: what was read of model.init's file.
void report_slices_read(TrainingSetup& setup) {
  const InitialWeightsSource& source = *setup.initial_weights;
  source.log_read();
  report_bytes_read(source.bytes_read(), *setup.world.group, source.bytes_in_files());
}

void make_data_and_model(const Config& config, TrainingSetup& setup) {
  const bool synthetic =
      config.data.type != DataType::kHdf5 && config.data.type != DataType::kTokens;
  HostGroup& group = *setup.world.group;
  if (synthetic)
    check_host_memory(config, setup.sharding, deck_data_info(config.data), setup.job, group);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));  // same initial model on all ranks
  setup.data = make_datasets(config.data, config.run.seed);
  check_validation_split(config, setup.data);
  const DatasetInfo info = setup.data.train->info();
  if (!synthetic) check_host_memory(config, setup.sharding, info, setup.job, group);
  setup.model = make_model(config.model, info, setup.sharding.initial_values());
  const bool gpt = config.model.type == ModelType::kGpt;
  if (!config.model.init.empty() && setup.sharding.parameters_sharded()) {
    // The trainer reads each rank's slices as it shards the parameters (make_run_and_files).
    setup.initial_weights =
        open_initial_weights(config.model.init, *setup.model, gpt, config.model.init_skip);
  } else if (!config.model.init.empty()) {
    report_bytes_read(
        load_initial_weights(config.model.init, *setup.model, gpt, config.model.init_skip), group);
  }
  setup.freeze = freeze_parameters(*setup.model, config.model.freeze);
}

MetricsHeader metrics_header(const TrainingSetup& setup) {
  MetricsHeader header;
  header.version = ddptrain_version();
  header.world_size = setup.comm->size();
  header.nodes = setup.job.topology.node_count;
  header.device = setup.job.device.device.str();
  header.backend = setup.comm->backend_name();
  header.config = setup.config.resolved_text;
  header.task = setup.data.train->info().task;
  return header;
}

// The run and its files; the checkpoint train.resume names loaded into the run's state.
void make_run_and_files(TrainingSetup& setup) {
  RunParts parts{*setup.comm,       setup.sharding,       *setup.world.group,        *setup.model,
                 *setup.data.train, setup.data.val.get(), setup.world.watchdog.get()};
  parts.faults = setup.faults.get();
  parts.initial_values = setup.initial_weights.get();
  setup.run = std::make_unique<TrainingRun>(run_options(setup.config, setup.comm->size()),
                                            parts);  // last deck check
  if (setup.initial_weights) {
    report_slices_read(setup);
    setup.initial_weights.reset();  // read: the files are closed
  }
  setup.run->register_state(setup.state);
  // Every parameter, frozen ones too: the checkpoint is the whole model.
  setup.files = std::make_unique<RunFiles>(
      run_files_options(setup.config),
      CheckpointContents{setup.model->named_parameters(), setup.model->named_buffers(),
                         setup.config.resolved_text, &setup.state, setup.run->sharded_weights()},
      *setup.world.group);
  setup.resume_path = setup.files->checkpoint_to_resume();
  if (setup.resume_path.empty()) return;
  const Watchdog::Scope watched =
      setup.world.watchdog->phase("checkpoint read of " + setup.resume_path);
  setup.resume_step = setup.files->load(setup.resume_path);
  setup.run->resume_at(setup.resume_step);
}

}  // namespace

std::unique_ptr<TrainingSetup> set_up_training(
    const Config& config, const std::function<void(const TrainingSetup&)>& ready) {
  auto setup = std::make_unique<TrainingSetup>();
  setup->job = set_up_job(config.train.threads);
  setup->faults = faults_from_environment(setup->job.topology.world_rank);
  check_one_rank_per_gpu(setup->job, *setup->faults);
  warn_of_cpu_convolution_problem(setup->job);
  setup->world = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  watch_for_hangs(*setup->world.watchdog, *setup->world.group, config);
  if (config.train.deterministic) make_deterministic();
  setup->comm = make_communicator(config.ddp.backend, setup->job.device.device, MPI_COMM_WORLD,
                                  setup->world.watchdog.get(), *setup->faults);
  setup->sharding = plan_sharding(config, setup->comm->size(), setup->job.device.device);
  make_data_and_model(config, *setup);
  // From here on, train.batch_size = auto is a number (the deck's text in config.cfg still says
  // auto).
  setup->config = config;
  if (config.train.batch_size_auto) {
    setup->config.train.batch_size =
        largest_batch_size(trainer_options(config, setup->comm->size()), setup->sharding,
                           *setup->comm, *setup->world.group, *setup->model, *setup->data.train,
                           setup->faults->trial_sample_limit());
  }
  make_run_and_files(*setup);
  setup->files->open(metrics_header(*setup), setup->resume_step);  // only now is anything written
  if (ready) ready(*setup);
  return setup;
}

}  // namespace ddpt
