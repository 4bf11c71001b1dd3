// ddptrain eval DECK --checkpoint PATH [--input data.h5]: the loss and metrics of a checkpoint on
// a dataset (the deck's validation split, else its training data, or --input read with the deck's
// dataset names), every rank evaluating its share and the sums reduced.
#include "app/commands.hpp"
#include "comm/make_communicator.hpp"
#include "comm/watched_world.hpp"
#include "config/batch_size.hpp"
#include "config/command_flags.hpp"
#include "config/parse_config.hpp"
#include "run/evaluate.hpp"
#include "setup/inference_model.hpp"
#include "util/log.hpp"

namespace ddpt {

int eval_command(const std::vector<std::string>& args, MpiEnv& /*mpi*/) {
  const char* usage =
      "ddptrain eval DECK --checkpoint PATH [--input DATA.h5] [--section.key=value]";
  std::vector<std::string> rest = args;
  const std::string checkpoint = take_required_flag(rest, "checkpoint", usage);
  const std::string input = take_flag(rest, "input");
  const Config config = parse_config(rest);
  const Job job = set_up_job(config.train.threads);
  const WatchedWorld world = watch_world(MPI_COMM_WORLD, config.dist.timeout_s);
  std::unique_ptr<Communicator> comm = make_communicator(config.ddp.backend, job.device.device,
                                                         MPI_COMM_WORLD, world.watchdog.get());
  InferenceModel loaded = load_inference_model(config, checkpoint, job, comm.get());
  const std::shared_ptr<const Dataset> data = evaluation_data(config, input);
  const int64_t batch = eval_batch_size(config.eval, config.train, comm->size());
  const EvalResult result = evaluate(loaded.runnable(), *data, *comm, batch);
  spdlog::info("eval: {} (step {}) on {}", checkpoint, loaded.step, data->describe());
  spdlog::info("eval: {}  ({} samples, {} rank(s))", describe_eval(result, data->info().task),
               result.samples, comm->size());
  return 0;
}

}  // namespace ddpt
