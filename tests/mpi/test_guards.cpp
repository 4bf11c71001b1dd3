// Non-finite gradients: a NaN injected on one rank makes every rank skip that step (and only
// that step), and train.max_bad_steps such steps in a row stop every rank with NumericalError
// (exit code 4). Runs at any world size; the NaN comes from the last rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <limits>
#include <set>

#include "comm/mpi_comm.hpp"
#include "data/synthetic_classification.hpp"
#include "ddp/reducer.hpp"
#include "models/make_model.hpp"
#include "support/training_fixture.hpp"
#include "util/error.hpp"

namespace ddpt::testing {
namespace {

// Wraps a model; on this rank, the training forward passes numbered in `poisoned` (0-based)
// return their output times `factor` (NaN by default). Forward passes in evaluation mode (the
// trainer's shape probe) are neither counted nor poisoned.
class PoisonedModel final : public Model {
 public:
  PoisonedModel(std::unique_ptr<Model> inner, std::set<int64_t> poisoned,
                float factor = std::numeric_limits<float>::quiet_NaN())
      : inner_(std::move(inner)), poisoned_(std::move(poisoned)), factor_(factor) {}
  torch::Tensor forward(const torch::Tensor& inputs) override {
    torch::Tensor out = inner_->forward(inputs);
    if (!training_) return out;
    return poisoned_.count(calls_++) ? out * factor_ : out;
  }
  std::vector<NamedTensor> named_parameters() override { return inner_->named_parameters(); }
  std::vector<NamedTensor> named_buffers() override { return inner_->named_buffers(); }
  void train(bool on) override {
    training_ = on;
    inner_->train(on);
  }
  void to(torch::Device device) override { inner_->to(device); }
  std::string describe() const override { return inner_->describe(); }

 private:
  std::unique_ptr<Model> inner_;
  std::set<int64_t> poisoned_;
  float factor_;
  bool training_ = true;
  int64_t calls_ = 0;
};

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Trains `steps` steps with outputs x `factor` (NaN) at `poisoned` forward passes on the last
// rank; returns the parameters after every step (index 0: before training), the summary and the
// spike guard's learning-rate factor at the end.
struct Trace {
  std::vector<std::vector<torch::Tensor>> params;
  RunResult summary;
  double spike_lr_factor = 1;
};
Trace train_with_poison(Config config, int64_t steps, std::set<int64_t> poisoned,
                        float factor = std::numeric_limits<float>::quiet_NaN()) {
  config.train.steps = steps;
  config.log.every = steps;
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const SyntheticClassification data(synthetic_spec_of(config.data, config.run.seed));
  PoisonedModel model(make_model(config.model, config.data.features, config.data.classes),
                      rank() == world_size() - 1 ? std::move(poisoned) : std::set<int64_t>{},
                      factor);
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  TrainingRun training(config, RunParts{comm, group, model, data});
  Trace trace;
  auto snapshot = [&] {
    std::vector<torch::Tensor> now;
    for (const auto& p : model.named_parameters()) now.push_back(p.tensor.detach().clone());
    trace.params.push_back(now);
  };
  snapshot();
  DiscardedOutput output;
  trace.summary = training.run(output, [&](int64_t) { snapshot(); });
  trace.spike_lr_factor = training.trainer().facts().spike_lr_factor;
  return trace;
}

bool all_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

// The finite check: any NaN or inf in any bucket is found, and finite gradients whose sum
// overflows the float range are finite (the check first sums each bucket).
TEST(Guards, FiniteCheckFindsEveryNonFiniteGradientAndNoOther) {
  MpiComm comm(MPI_COMM_WORLD);
  auto a = torch::zeros({1000}, torch::requires_grad());
  auto b = torch::zeros({3, 7}, torch::requires_grad());
  ReducerOptions options;
  options.first_bucket_bytes = 1024;
  options.bucket_bytes = 1 << 20;
  Reducer reducer({{"a", a}, {"b", b}}, comm, options);
  auto set = [&](float value_a, float value_b, int64_t at) {
    reducer.zero_grad();  // the gradients become views of the buckets
    torch::NoGradGuard no_grad;
    a.mutable_grad().fill_(1.5f);
    b.mutable_grad().fill_(-2.0f);
    a.mutable_grad()[at] = value_a;
    b.mutable_grad().view(-1)[at % 21] = value_b;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
  set(1.0f, 1.0f, 7);
  EXPECT_TRUE(reducer.gradients_finite());
  for (const int64_t at : {0, 500, 999}) {
    set(nan, 1.0f, at);
    EXPECT_FALSE(reducer.gradients_finite()) << "NaN at " << at;
    set(1.0f, inf, at);
    EXPECT_FALSE(reducer.gradients_finite()) << "inf at " << at;
    set(-inf, 1.0f, at);
    EXPECT_FALSE(reducer.gradients_finite()) << "-inf at " << at;
    set(inf, -inf, at);  // an inf and a -inf: their sum is NaN
    EXPECT_FALSE(reducer.gradients_finite()) << "inf and -inf at " << at;
  }
  {
    reducer.zero_grad();
    torch::NoGradGuard no_grad;
    a.mutable_grad().fill_(big);  // finite, but any two of them sum to inf
    b.mutable_grad().fill_(-big);
  }
  EXPECT_TRUE(reducer.gradients_finite());
}

TEST(Guards, NanOnOneRankMakesEveryRankSkipThatStep) {
  const Trace trace = train_with_poison(small_config(OptimizerType::kAdamW), 6, {3});
  ASSERT_EQ(trace.params.size(), 7u);
  for (int64_t step = 1; step <= 6; ++step) {
    const bool unchanged = all_equal(trace.params[step], trace.params[step - 1]);
    EXPECT_EQ(unchanged, step == 4) << "after step " << step;  // forward pass 3 = step 4
  }
  for (const auto& p : trace.params.back()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  ASSERT_EQ(trace.summary.records.size(), 1u);
  EXPECT_EQ(trace.summary.records[0].skipped_steps, 1);
  EXPECT_TRUE(std::isfinite(trace.summary.records[0].loss));  // skipped steps are not averaged in
  // Every rank holds the same parameters: the decision was the same everywhere.
  torch::Tensor mine =
      torch::cat({trace.params.back()[0].flatten(), trace.params.back()[1].flatten()});
  torch::Tensor biggest = mine.clone();
  torch::Tensor smallest = mine.clone();
  MPI_Allreduce(MPI_IN_PLACE, biggest.data_ptr<float>(), static_cast<int>(biggest.numel()),
                MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, smallest.data_ptr<float>(), static_cast<int>(smallest.numel()),
                MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_TRUE(torch::equal(biggest, smallest));
}

TEST(Guards, TooManyBadStepsInARowStopEveryRankWithExitCode4) {
  Config config = small_config(OptimizerType::kSgd);
  config.train.max_bad_steps = 3;
  try {
    train_with_poison(config, 10, {2, 3, 4, 5, 6, 7, 8, 9});
    FAIL() << "no NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_EQ(e.code(), ExitCode::kNumerical);
    EXPECT_TRUE(e.collective());
    EXPECT_NE(std::string(e.what()).find("3 steps in a row (up to step 5"), std::string::npos)
        << e.what();
  }
  // Bad steps that are not consecutive never stop the run.
  const Trace trace = train_with_poison(config, 10, {1, 2, 4, 5, 7, 8});
  EXPECT_EQ(trace.summary.records.at(0).skipped_steps, 6);
}

}  // namespace
}  // namespace ddpt::testing

namespace ddpt::testing {
namespace {

// train.spike_factor: logits x 1000 on the last rank at one step make the global loss a spike;
// every rank skips that step (and only it) and the learning rate is halved from then on.
TEST(Guards, LossSpikeOnOneRankIsSkippedEverywhereAndLowersTheRate) {
  Config config = small_config(OptimizerType::kSgd);
  config.train.spike_factor = 3;
  config.train.spike_window = 3;
  config.train.spike_lr_factor = 0.5;
  const Trace trace = train_with_poison(config, 8, {5}, 1000.0f);
  ASSERT_EQ(trace.params.size(), 9u);
  for (int64_t step = 1; step <= 8; ++step) {
    const bool unchanged = all_equal(trace.params[step], trace.params[step - 1]);
    EXPECT_EQ(unchanged, step == 6) << "after step " << step;
  }
  ASSERT_EQ(trace.summary.records.size(), 1u);
  EXPECT_EQ(trace.summary.records[0].skipped_steps, 1);
  EXPECT_DOUBLE_EQ(trace.spike_lr_factor, 0.5);
  EXPECT_DOUBLE_EQ(trace.summary.records[0].lr, 0.5 * config.optim.lr);
}

}  // namespace
}  // namespace ddpt::testing
