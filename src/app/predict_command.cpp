// ddptrain predict DECK --checkpoint PATH --input in.h5 --output out.h5: the model's outputs for
// every row of the input, rows shared across ranks, all written into one file collectively in
// input order.
#include <fmt/format.h>

#include "app/commands.hpp"
#include "comm/make_communicator.hpp"
#include "comm/watched_world.hpp"
#include "config/batch_size.hpp"
#include "config/command_flags.hpp"
#include "config/parse_config.hpp"
#include "h5/h5_file.hpp"
#include "io/predictions_writer.hpp"
#include "run/evaluate.hpp"
#include "setup/inference_model.hpp"
#include "setup/sharding.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace ddpt {
namespace {

const char* kPredictUsage =
    "ddptrain predict DECK --checkpoint PATH --input IN.h5 --output OUT.h5 [--section.key=value]";

}  // namespace

int predict_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  std::vector<std::string> rest = args;
  const std::string checkpoint = take_required_flag(rest, "checkpoint", kPredictUsage);
  const std::string input_path = take_required_flag(rest, "input", kPredictUsage);
  const std::string output_path = take_required_flag(rest, "output", kPredictUsage);
  const Config config = parse_config(rest);
  if (config.data.type == DataType::kTokens) {
    throw ConfigError("predict reads rows of an inputs array; for token data use ddptrain eval");
  }
  const Job job = set_up_job(config.train.threads);
  const WatchedWorld watched = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  // ZeRO-3 gathers each block's parameters from every rank: a communicator for that alone.
  std::unique_ptr<Communicator> comm;
  if (plan_sharding(config, mpi.world_size(), job.device.device).parameters_sharded()) {
    comm = make_communicator(config.ddp.backend, job.device.device, MPI_COMM_WORLD,
                             watched.watchdog.get());
  }
  InferenceModel loaded = load_inference_model(config, checkpoint, job, comm.get());

  const H5File input = H5File::open_read(input_path);
  const H5Dataset inputs = H5Dataset::open(input, config.data.inputs);
  const auto [first, count] = share_of_rows(inputs.rows(), mpi.world_rank(), mpi.world_size());
  const torch::Tensor outputs = predict_rows(
      loaded, inputs, first, count, eval_batch_size(config.eval, config.train, mpi.world_size()),
      share_of_rows(inputs.rows(), 0, mpi.world_size()).second);
  write_predictions(output_path,
                    {checkpoint, loaded.step, input_path, config.data.inputs, loaded.info.task},
                    inputs.rows(), first, outputs, *watched.group);
  spdlog::info("predict: {} rows of {} on {} rank(s) with {} (step {}) -> {}", inputs.rows(),
               inputs.where(), mpi.world_size(), checkpoint, loaded.step, output_path);
  return 0;
}

}  // namespace ddpt
