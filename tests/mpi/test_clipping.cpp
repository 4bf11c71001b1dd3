// Gradient clipping by global norm: the step taken has exactly the clip norm, points where the
// unclipped gradient points, the logged norm is the unclipped one, and N ranks still train like
// one rank with the N x batch. Runs at any world size.
#include <gtest/gtest.h>
#include <mpi.h>

#include "comm/mpi_comm.hpp"
#include "data/synthetic_classification.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "support/training_fixture.hpp"

namespace ddpt::testing {
namespace {

struct OneStep {
  std::vector<torch::Tensor> delta;  // parameters after - before
  double logged_norm = 0;
};

// One plain SGD step with lr 1 (the step is minus the gradient) on `comm`.
OneStep sgd_step(Config config, double clip, MPI_Comm comm) {
  config.optim.type = OptimizerType::kSgd;
  config.optim.lr = 1.0;
  config.optim.momentum = 0.0;
  config.optim.weight_decay = 0.0;
  config.optim.clip = clip;
  config.train.steps = 1;
  config.log.every = 1;
  MpiComm communicator(comm);
  HostGroup group(comm, /*watchdog=*/nullptr);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const SyntheticClassification data(synthetic_spec_of(config.data, config.run.seed));
  auto model = make_model(config.model, config.data.features, config.data.classes);
  std::vector<torch::Tensor> before;
  for (const auto& p : model->named_parameters()) before.push_back(p.tensor.detach().clone());
  TrainingRun training(
      run_options(config, communicator.size()),
      RunParts{communicator, plan_sharding(config, communicator.size(), communicator.device()),
               group, *model, data});
  DiscardedOutput output;
  OneStep out;
  out.logged_norm = training.run(output).records.at(0).grad_norm;
  const auto after = model->named_parameters();
  for (size_t i = 0; i < before.size(); ++i)
    out.delta.push_back(after[i].tensor.detach() - before[i]);
  return out;
}

double norm_of(const std::vector<torch::Tensor>& tensors) {
  double squares = 0;
  for (const auto& t : tensors) squares += t.to(torch::kDouble).square().sum().item<double>();
  return std::sqrt(squares);
}

TEST(Clipping, StepHasTheClipNormAndTheGradientsDirection) {
  const Config config = small_config(OptimizerType::kSgd);
  const OneStep free = sgd_step(config, 0.0, MPI_COMM_WORLD);
  const double norm = norm_of(free.delta);
  ASSERT_GT(norm, 0.0);
  EXPECT_NEAR(free.logged_norm, norm, 1e-5 * norm);

  const double clip = norm / 4;
  const OneStep clipped = sgd_step(config, clip, MPI_COMM_WORLD);
  EXPECT_NEAR(norm_of(clipped.delta), clip, 1e-5 * clip);
  EXPECT_NEAR(clipped.logged_norm, norm, 1e-5 * norm);  // the logged norm is before clipping
  std::vector<torch::Tensor> scaled;
  for (const auto& d : clipped.delta) scaled.push_back(d * 4);
  EXPECT_LT(max_relative_difference(scaled, free.delta), 1e-5);

  // A clip above the norm changes nothing.
  const OneStep loose = sgd_step(config, norm * 2, MPI_COMM_WORLD);
  EXPECT_LT(max_relative_difference(loose.delta, free.delta), 1e-6);

  // N ranks clip the averaged gradient: the same step as one rank with the N x batch.
  Config single = config;
  single.train.batch_size = config.train.batch_size * world_size();
  const OneStep reference = sgd_step(single, clip, MPI_COMM_SELF);
  EXPECT_LT(max_relative_difference(clipped.delta, reference.delta), 1e-5);
}

}  // namespace
}  // namespace ddpt::testing
