// Non-finite gradients: a NaN injected on one rank makes every rank skip that step (and only
// that step), and train.max_bad_steps such steps in a row stop every rank with NumericalError
// (exit code 4). Runs at any world size; the NaN comes from the last rank. The same with the
// checks on the device (train.step_checks = device, run here on the CPU): the same steps skipped,
// the same parameters, and no value read back to the host inside a step.
#include <gtest/gtest.h>
#include <mpi.h>

#include <limits>
#include <set>

#include "comm/mpi_comm.hpp"
#include "data/synthetic_classification.hpp"
#include "ddp/reducer.hpp"
#include "setup/make_datasets.hpp"
#include "setup/make_model.hpp"
#include "setup/run_options.hpp"
#include "setup/sharding.hpp"
#include "support/training_fixture.hpp"
#include "util/error.hpp"
#include "util/host_read.hpp"

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
// rank; returns the parameters after every step (index 0: before training), the summary, the
// spike guard's learning-rate factor and the moving averages at the end, and the count of host
// reads after every step. One metrics row at the end, unless config.log.every is set below
// `steps`.
struct Trace {
  std::vector<std::vector<torch::Tensor>> params;
  RunResult summary;
  double spike_lr_factor = 1;
  std::vector<torch::Tensor> ema;
  std::vector<int64_t> reads_after_step;  // util/host_read.hpp's count, by step (index 0: step 1)
};
Trace train_with_poison(Config config, int64_t steps, std::set<int64_t> poisoned,
                        float factor = std::numeric_limits<float>::quiet_NaN()) {
  config.train.steps = steps;
  if (config.log.every <= 0 || config.log.every > steps) config.log.every = steps;
  MpiComm comm(MPI_COMM_WORLD);
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  const SyntheticClassification data(synthetic_spec_of(config.data, config.run.seed));
  PoisonedModel model(make_model(config.model, config.data.features, config.data.classes),
                      rank() == world_size() - 1 ? std::move(poisoned) : std::set<int64_t>{},
                      factor);
  HostGroup group(MPI_COMM_WORLD, /*watchdog=*/nullptr);
  TrainingRun training(
      run_options(config, comm.size()),
      RunParts{comm, plan_sharding(config, comm.size(), comm.device()), group, model, data});
  Trace trace;
  auto snapshot = [&] {
    std::vector<torch::Tensor> now;
    for (const auto& p : model.named_parameters()) now.push_back(p.tensor.detach().clone());
    trace.params.push_back(now);
  };
  snapshot();
  DiscardedOutput output;
  trace.summary = training.run(output, [&](int64_t) {
    trace.reads_after_step.push_back(host_reads_so_far());
    snapshot();
  });
  trace.spike_lr_factor = training.trainer().facts().spike_lr_factor;
  trace.ema = training.trainer().ema_averages();
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

namespace ddpt::testing {
namespace {

// AdamW with clipping that bites (optim.clip well under the gradients' norm), a moving average,
// and metrics rows every 4 steps.
Config gated_config(StepChecks where) {
  Config config = small_config(OptimizerType::kAdamW);
  config.optim.clip = 0.05;
  config.train.ema_decay = 0.9;
  config.train.step_checks = where;
  config.log.every = 4;
  return config;
}

// On the device the same step is skipped (the parameters stay bit for bit), the others clip and
// update as on the host: within 1e-6 (the device divides by (norm + eps) / clip in float32 where
// the host multiplies by clip / (norm + eps) in double). The rows say the same.
TEST(Guards, ChecksOnTheDeviceSkipAndClipAsOnTheHost) {
  const Trace host = train_with_poison(gated_config(StepChecks::kHost), 8, {3});
  const Trace device = train_with_poison(gated_config(StepChecks::kDevice), 8, {3});
  ASSERT_EQ(device.params.size(), 9u);
  for (int64_t step = 1; step <= 8; ++step) {
    EXPECT_EQ(all_equal(device.params[step], device.params[step - 1]), step == 4)
        << "after step " << step;
    EXPECT_LT(max_relative_difference(device.params[step], host.params[step]), 1e-6)
        << "after step " << step;
  }
  ASSERT_FALSE(host.ema.empty());
  EXPECT_LT(max_relative_difference(device.ema, host.ema), 1e-6);
  ASSERT_EQ(device.summary.records.size(), 2u);
  for (size_t row = 0; row < 2; ++row) {
    const StepRecord& h = host.summary.records[row];
    const StepRecord& d = device.summary.records[row];
    EXPECT_EQ(d.skipped_steps, h.skipped_steps) << "row " << row;
    EXPECT_NEAR(d.loss, h.loss, 1e-6 * std::abs(h.loss)) << "row " << row;
    if (row == 0) {  // its last step is the skipped one, whose gradients have no finite norm
      EXPECT_TRUE(std::isnan(h.grad_norm) && std::isnan(d.grad_norm))
          << h.grad_norm << " " << d.grad_norm;
      continue;
    }
    EXPECT_NEAR(d.grad_norm, h.grad_norm, 1e-5 * h.grad_norm) << "row " << row;
    EXPECT_GT(d.grad_norm, gated_config(StepChecks::kDevice).optim.clip) << "clipping bit";
  }
  EXPECT_EQ(device.summary.records[0].skipped_steps, 1);
}

// Inside a step nothing is read back: the count of reads moves only across the steps that end
// a metrics row (4 and 8). On the host every step reads (the finite check), which shows the count
// sees the reads a step makes.
TEST(Guards, ChecksOnTheDeviceReadNothingBackInsideAStep) {
  const Trace host = train_with_poison(gated_config(StepChecks::kHost), 12, {5});
  const Trace device = train_with_poison(gated_config(StepChecks::kDevice), 12, {5});
  ASSERT_EQ(device.reads_after_step.size(), 12u);
  for (size_t k = 1; k < 12; ++k) {
    const int64_t step = static_cast<int64_t>(k) + 1;  // the reads of step `step` and of what
    const bool row_before = (step - 1) % 4 == 0;       // followed step - 1 (its row, if any)
    const int64_t device_reads = device.reads_after_step[k] - device.reads_after_step[k - 1];
    const int64_t host_reads = host.reads_after_step[k] - host.reads_after_step[k - 1];
    if (row_before) {
      EXPECT_GT(device_reads, 0) << "the row of step " << step - 1 << " reads the loss";
    } else {
      EXPECT_EQ(device_reads, 0) << "step " << step << " read a value back";
    }
    EXPECT_GT(host_reads, 0) << "step " << step;
  }
  EXPECT_EQ(device.summary.records.at(1).skipped_steps, 1);  // step 6, in the second row
}

// train.max_bad_steps in a row end the run at the next row, with the host's message.
TEST(Guards, TooManyBadStepsOnTheDeviceStopAtTheRow) {
  Config config = gated_config(StepChecks::kDevice);
  config.train.max_bad_steps = 3;
  config.log.every = 5;
  try {
    train_with_poison(config, 10, {2, 3, 4, 5, 6, 7, 8, 9});
    FAIL() << "no NumericalError";
  } catch (const NumericalError& e) {
    EXPECT_EQ(e.code(), ExitCode::kNumerical);
    EXPECT_NE(std::string(e.what()).find("3 steps in a row (up to step 5"), std::string::npos)
        << e.what();
  }
  config.log.every = 10;
  const Trace trace = train_with_poison(config, 10, {1, 2, 4, 5, 7, 8});
  EXPECT_EQ(trace.summary.records.at(0).skipped_steps, 6);
}

// Where the checks cannot be made on the device, asking for it is a deck error (exit 2).
TEST(Guards, ChecksOnTheDeviceRefusedWhereTheyCannotBe) {
  Config sgd = gated_config(StepChecks::kDevice);
  sgd.optim.type = OptimizerType::kSgd;
  Config spike = gated_config(StepChecks::kDevice);
  spike.train.spike_factor = 3;
  for (const Config& config : {sgd, spike}) {
    try {
      train_with_poison(config, 2, {});
      FAIL() << "no ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("train.step_checks = device"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace ddpt::testing
