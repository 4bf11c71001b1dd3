// model.freeze: frozen parameters stay at their initial values, are absent from the gradient
// buckets (so never communicated), and N ranks still train like one rank with the N x batch.
// Runs at any world size.
#include <gtest/gtest.h>

#include "comm/mpi_comm.hpp"
#include "data/synthetic_classification.hpp"
#include "models/freeze.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "step/trainer.hpp"
#include "support/training_fixture.hpp"
#include "util/error.hpp"

namespace ddpt::testing {
namespace {

// small_config's MLP is 32 -> 64 -> 48 -> 5: parameters 0.*, 2.*, 4.*.
constexpr const char* kFrozen = "0.*, 4.bias";

TEST(Freeze, FrozenParametersStayPutAndOthersTrainAsOnOneRank) {
  Config config = small_config(OptimizerType::kAdamW);
  config.model.freeze = kFrozen;
  const auto initial =
      initial_parameters(config);  // 0.weight 0.bias 2.weight 2.bias 4.weight 4.bias
  const auto on_n_ranks = train_and_get_parameters(config, MPI_COMM_WORLD);
  Config reference = config;
  reference.train.batch_size *= world_size();
  const auto on_one_rank = train_and_get_parameters(reference, MPI_COMM_SELF);
  ASSERT_EQ(on_n_ranks.size(), 6u);
  for (const size_t frozen : {0u, 1u, 5u}) {
    EXPECT_TRUE(torch::equal(on_n_ranks[frozen], initial[frozen])) << "parameter " << frozen;
  }
  for (const size_t trained : {2u, 3u, 4u}) {
    EXPECT_FALSE(torch::equal(on_n_ranks[trained], initial[trained])) << "parameter " << trained;
  }
  EXPECT_LT(max_relative_difference(on_n_ranks, on_one_rank), 1e-5);
}

TEST(Freeze, FrozenParametersAreNotBucketed) {
  Config config = small_config(OptimizerType::kSgd);
  config.model.freeze = kFrozen;
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const SyntheticClassification data(synthetic_spec_of(config.data, config.run.seed));
  auto model = make_model(config.model, config.data.features, config.data.classes);
  const FreezeCount count = freeze_parameters(*model, config.model.freeze);
  EXPECT_EQ(count.frozen_tensors, 3);
  EXPECT_EQ(count.frozen_values, 32 * 64 + 64 + 5);
  Trainer trainer(trainer_options(config, comm.size()),
                  plan_sharding(config, comm.size(), comm.device()), comm, *model, data);
  const TrainerFacts facts = trainer.facts();
  EXPECT_EQ(facts.bucketed_values, count.trainable_values);
  EXPECT_EQ(facts.bucketed_values, 64 * 48 + 48 + 48 * 5);
  EXPECT_EQ(facts.trainable_tensors, 3u);
}

TEST(Freeze, APatternThatMatchesNothingIsAConfigError) {
  Config config = small_config(OptimizerType::kSgd);
  auto model = make_model(config.model, config.data.features, config.data.classes);
  try {
    freeze_parameters(*model, "0.*,encoder.*");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'encoder.*' matches no parameter"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddpt::testing
