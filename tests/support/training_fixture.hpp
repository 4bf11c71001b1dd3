// Small, fast training setups shared by the MPI tests: a synthetic classification task and a
// function that trains it on a given MPI communicator and returns the final parameters.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "run/training_run.hpp"
#include "support/discarded_output.hpp"

namespace ddpt::testing {

// A config for a few quick steps: 2048 samples x 32 features, 5 classes, MLP 32 -> 64 -> 48 -> 5.
Config small_config(OptimizerType optimizer);

// Small versions of the GPT and CNN decks, for a few quick steps at 1, 2 or 3 ranks: a GPT of 2
// blocks (32 wide, 32 tokens) on 12 windows of 16 tokens per step, and a CNN with batch norm
// (channels 4,8) on 12 images of 2x8x8 per step; both with SGD.
Config small_gpt();
Config small_cnn();

// What train() leaves: the progress records and detached copies of the final parameters and
// buffers, in registration order.
struct TrainedRun {
  std::vector<StepRecord> records;
  std::vector<torch::Tensor> params;
  std::vector<torch::Tensor> buffers;
  std::vector<bool> trains;             // by parameter: false where model.freeze holds it
  std::vector<torch::Tensor> averages;  // of the parameters that train (train.ema_decay > 0)
  TrainerFacts facts;                   // at the end
};
// Trains `config` (its data and model, model.freeze applied) on `comm` (MpiComm over it) from the
// seed's initial model. Collective over `comm`.
TrainedRun train(const Config& config, MPI_Comm comm);
// train(config, comm).params.
std::vector<torch::Tensor> train_and_get_parameters(const Config& config, MPI_Comm comm);

// max over parameters of ||a - b|| / ||b||. A parameter whose difference is not finite (a NaN or
// an infinity in a or b) is a test failure naming it, and the result is then NaN, which fails any
// EXPECT_LT or EXPECT_GT it meets.
double max_relative_difference(const std::vector<torch::Tensor>& a,
                               const std::vector<torch::Tensor>& b);

// The world size of MPI_COMM_WORLD.
int world_size();

}  // namespace ddpt::testing

namespace ddpt::testing {
// The parameters the seed gives before any training (to check that training moved them).
std::vector<torch::Tensor> initial_parameters(const Config& config);
// Path of the TorchScript test model that ctest generates (env DDPTRAIN_TEST_TORCHSCRIPT).
std::string torchscript_test_model();
// The TorchScript model of blocks that ctest generates (env DDPTRAIN_TEST_TORCHSCRIPT_BLOCKS;
// tests/e2e/make_torchscript_blocks.py): 32 inputs, 5 classes.
std::string torchscript_blocks_test_model();
// The TorchScript model that calls submodules under an `if` and in a loop on the data (env
// DDPTRAIN_TEST_TORCHSCRIPT_BRANCHES; tests/e2e/make_torchscript_branches.py): 64 inputs, 10
// classes.
std::string torchscript_branches_test_model();
}  // namespace ddpt::testing
