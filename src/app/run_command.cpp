#include <fmt/format.h>

#include <iostream>

#include "app/commands.hpp"
#include "config/parse_config.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace ddpt {
namespace {

std::string usage() {
  return "usage: ddptrain COMMAND [ARGS]\n"
         "\n"
         "Trains LibTorch models data-parallel over MPI ranks (one rank per GPU or CPU slot).\n"
         "Launch with mpirun -np N, srun, or as a plain single process.\n"
         "\n"
         "commands:\n"
         "  train DECK [--section.key=value ...]  train as the deck says; overrides win\n"
         "  info [DECK] [--section.key=value ...]  print MPI, ranks, nodes, devices, threads\n"
         "  eval DECK --checkpoint PATH [--input DATA.h5]\n"
         "                                        loss and metrics of a checkpoint on the deck's\n"
         "                                        validation data (else its training data) or on\n"
         "                                        DATA.h5; all ranks share the rows\n"
         "  predict DECK --checkpoint PATH --input IN.h5 --output OUT.h5\n"
         "                                        model outputs for every row of IN.h5 (dataset\n"
         "                                        data.inputs) into OUT.h5 /predictions, in input\n"
         "                                        order; all ranks share the rows\n"
         "  generate DECK --checkpoint PATH --input PROMPTS.h5 --output OUT.h5\n"
         "                                        continue every prompt of PROMPTS.h5 (/tokens,\n"
         "                                        /offsets) with a next-token model, as\n"
         "                                        [generate] says; the new tokens into OUT.h5 in\n"
         "                                        the prompts' order; all ranks share the prompts\n"
         "  generate DECK --checkpoint PATH --prompt TEXT\n"
         "                                        the model continues TEXT, printed: text as\n"
         "                                        bytes (vocabulary 256), or as GPT-2's tokens\n"
         "                                        with data.tokenizer = DIR\n"
         "  export DECK --checkpoint PATH --output DIR [--weights trained|average]\n"
         "         [--max-shard-size 5GiB]        the checkpoint's model as DIR/model.safetensors\n"
         "                                        (larger: shards and an index, as Hugging Face\n"
         "                                        saves; and for the built-in GPT, config.json as\n"
         "                                        Hugging Face's GPT-2); average: the moving\n"
         "                                        average (the default where the run kept one)\n"
         "  make-data KIND --output FILE [...]    write a synthetic classification, regression or\n"
         "                                        tokens dataset, or prompts from a text, as HDF5\n"
         "                                        (see make-data --help)\n"
         "  inspect FILE                          summarise a metrics, checkpoint, predictions or\n"
         "                                        generations file (verifies checksums; exit 3 if\n"
         "                                        damaged)\n"
         "  inspect RUN_DIR/flight                after a hang (exit 5): where the ranks' last\n"
         "                                        collectives part, from their flight records\n"
         "  bench comm [DECK] [...]               time all_reduce, reduce_scatter, all_gather on\n"
         "                                        the deck's backend over message sizes: time,\n"
         "                                        algbw, busbw (see bench --help)\n"
         "\n"
         "  -h, --help      this text and every deck option\n"
         "  -V, --version   the version\n"
         "\n"
         "exit codes: 0 done, 2 bad command line or deck, 3 bad data or model file,\n"
         "            4 numerical failure, 5 collective timed out (dist.timeout_s) or failed,\n"
         "            6 out of GPU memory (lower train.batch_size, or set it to auto),\n"
         "            1 other errors,\n"
         "            75 stopped by SIGUSR1/SIGTERM after writing a checkpoint (train.resume = "
         "auto\n"
         "            continues; the slurm/ scripts requeue the job on it)\n";
}

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

}  // namespace

int run_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  const bool rank0 = mpi.world_rank() == 0;
  if (args.empty()) throw ConfigError("no command given\n" + usage());
  const std::string& command = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "-V" || command == "--version") {
    if (rank0) std::cout << "ddptrain " << ddptrain_version() << "\n";
    return 0;
  }
  if (command == "make-data" && wants_help(rest)) {
    if (rank0) std::cout << make_data_help();
    return 0;
  }
  if (command == "bench" && wants_help(rest)) {
    if (rank0) std::cout << bench_help();
    return 0;
  }
  if (command == "-h" || command == "--help" || wants_help(rest)) {
    if (rank0) std::cout << usage() << "\n" << options_help();
    return 0;
  }
  if (command == "train") return train_command(rest, mpi);
  if (command == "info") return info_command(rest, mpi);
  if (command == "inspect") return inspect_command(rest, mpi);
  if (command == "eval") return eval_command(rest, mpi);
  if (command == "predict") return predict_command(rest, mpi);
  if (command == "generate") return generate_command(rest, mpi);
  if (command == "export") return export_command(rest, mpi);
  if (command == "make-data") return make_data_command(rest, mpi);
  if (command == "bench") return bench_command(rest, mpi);
  throw ConfigError(
      "unknown command '" + command +
      "' (commands: train, eval, predict, generate, export, make-data, info, inspect, bench; "
      "see "
      "--help)");
}

}  // namespace ddpt
