// The built-in models (names, shapes, causality, FLOPs), the model factory's errors, and the
// training-loop helpers of mixed precision and the guards: autocast scope, loss scaler, spike
// guard.
#include <gtest/gtest.h>

#include "models/autocast.hpp"
#include "models/cnn.hpp"
#include "models/gpt.hpp"
#include "setup/make_model.hpp"
#include "step/loss_scaler.hpp"
#include "step/spike_guard.hpp"
#include "step/task_loss.hpp"
#include "support/counting_allocator.hpp"
#include "util/error.hpp"
#include "util/generator_state.hpp"
#include "util/releasable_storage.hpp"

namespace ddpt {
namespace {

GptSpec tiny_gpt() {
  GptSpec spec;
  spec.vocab = 20;
  spec.block = 8;
  spec.n_layer = 2;
  spec.n_head = 2;
  spec.n_embd = 16;
  return spec;
}

std::vector<std::string> names(Model& model) {
  std::vector<std::string> out;
  for (const auto& p : model.named_parameters()) out.push_back(p.name);
  return out;
}

TEST(Gpt, NamesAreGpt2sAndTheTiedHeadHasNoParameter) {
  torch::manual_seed(1);
  Gpt tied(tiny_gpt());
  const std::vector<std::string> expected = {"wte.weight",
                                             "wpe.weight",
                                             "h.0.ln_1.weight",
                                             "h.0.ln_1.bias",
                                             "h.0.attn.c_attn.weight",
                                             "h.0.attn.c_attn.bias",
                                             "h.0.attn.c_proj.weight",
                                             "h.0.attn.c_proj.bias",
                                             "h.0.ln_2.weight",
                                             "h.0.ln_2.bias",
                                             "h.0.mlp.c_fc.weight",
                                             "h.0.mlp.c_fc.bias",
                                             "h.0.mlp.c_proj.weight",
                                             "h.0.mlp.c_proj.bias"};
  const std::vector<std::string> got = names(tied);
  ASSERT_EQ(got.size(), 2 + 2 * 12 + 2u);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(got[i], expected[i]);
  EXPECT_EQ(got.back(), "ln_f.bias");
  // 2 x (4 d^2 + 4 d^2 + 4 d + ... ) checked through the count: embeddings + blocks + ln_f.
  const int64_t d = 16;
  const int64_t per_block =
      2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d);
  EXPECT_EQ(parameter_count(tied), 20 * d + 8 * d + 2 * per_block + 2 * d);
  GptSpec untied_spec = tiny_gpt();
  untied_spec.tie = false;
  Gpt untied(untied_spec);
  EXPECT_EQ(names(untied).back(), "lm_head.weight");
  EXPECT_EQ(parameter_count(untied), parameter_count(tied) + 20 * d);
}

TEST(Gpt, LogitsAreCausalAndShaped) {
  torch::manual_seed(2);
  Gpt gpt(tiny_gpt());
  gpt.train(false);
  const torch::Tensor tokens = torch::randint(20, {3, 8}, torch::kLong);
  const torch::Tensor logits = gpt.forward(tokens);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 8, 20}));
  torch::Tensor changed = tokens.clone();
  changed.index_put_({torch::indexing::Slice(), 5},
                     (tokens.index({torch::indexing::Slice(), 5}) + 1) % 20);
  const torch::Tensor other = gpt.forward(changed);
  using torch::indexing::Slice;
  // Positions before 5 cannot see token 5; position 5 and later do.
  EXPECT_TRUE(
      torch::allclose(other.index({Slice(), Slice(0, 5)}), logits.index({Slice(), Slice(0, 5)})));
  EXPECT_FALSE(torch::allclose(other.index({Slice(), 5}), logits.index({Slice(), 5})));
  // Shorter windows than the block are fine.
  EXPECT_EQ(gpt.forward(tokens.narrow(1, 0, 3)).size(1), 3);
}

TEST(Gpt, InitialisationIsGpt2s) {
  torch::manual_seed(3);
  GptSpec spec = tiny_gpt();
  spec.n_embd = 64;
  spec.n_layer = 8;
  Gpt gpt(spec);
  for (const auto& p : gpt.named_parameters()) {
    if (p.name == "h.0.attn.c_attn.weight") EXPECT_NEAR(p.tensor.std().item<double>(), 0.02, 2e-3);
    if (p.name == "h.0.mlp.c_proj.weight") EXPECT_NEAR(p.tensor.std().item<double>(), 0.005, 5e-4);
    if (p.name == "h.0.attn.c_attn.bias") EXPECT_EQ(p.tensor.abs().sum().item<double>(), 0.0);
    if (p.name == "h.0.ln_1.weight") EXPECT_TRUE(p.tensor.eq(1).all().item<bool>());
  }
}

TEST(Gpt, FlopsFollowTheFormula) {
  GptSpec spec = tiny_gpt();
  Gpt gpt(spec);
  // Per token: 2 x (12 L d^2 + d V) + 4 L T d; per sample: x T.
  const double d = 16, layers = 2, t = 8, vocab = 20;
  EXPECT_DOUBLE_EQ(gpt.forward_flops_per_sample(),
                   t * (2 * (12 * layers * d * d + d * vocab) + 4 * layers * t * d));
}

TEST(Cnn, ShapesNamesAndFlops) {
  torch::manual_seed(4);
  Cnn cnn({3, 8, 8}, {4, 8}, 1, 5);
  const torch::Tensor out = cnn.forward(torch::randn({2, 3, 8, 8}));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 5}));
  const std::vector<std::string> got = names(cnn);
  EXPECT_EQ(got.front(), "conv1.weight");
  EXPECT_NE(std::find(got.begin(), got.end(), "layer2.0.downsample.0.weight"), got.end());
  EXPECT_EQ(got.back(), "fc.bias");
  bool has_running_mean = false;
  for (const auto& b : cnn.named_buffers()) has_running_mean |= b.name == "bn1.running_mean";
  EXPECT_TRUE(has_running_mean);
  // stem 3->4 at 8x8; layer1 two 4->4 at 8x8; layer2 4->8 and 8->8 at 4x4 plus a 1x1 4->8; fc.
  const double expected = 2.0 * (3 * 4 * 9 * 64 + 2 * 4 * 4 * 9 * 64 + 4 * 8 * 9 * 16 +
                                 8 * 8 * 9 * 16 + 4 * 8 * 16 + 8 * 5);
  EXPECT_DOUBLE_EQ(cnn.forward_flops_per_sample(), expected);
}

double parameters_of(Model& model) {
  double count = 0;
  for (const auto& p : model.named_parameters()) count += static_cast<double>(p.tensor.numel());
  return count;
}

// planned_model_size sizes a deck's model without building it (setup/memory_check.hpp): its
// parameters must equal what make_model builds, for every built-in model and shape change.
// A GPT deck's model options: `layers` blocks `width` wide, 2 heads, a vocabulary of 24.
ModelConfig gpt_config(int64_t layers, int64_t width) {
  ModelConfig gpt;
  gpt.type = ModelType::kGpt;
  gpt.n_layer = layers;
  gpt.n_head = 2;
  gpt.n_embd = width;
  gpt.vocab = 24;
  return gpt;
}

// The planned size's parameters, nullopt where there is no plan.
std::optional<double> planned_parameter_count(const ModelConfig& config, const DatasetInfo& data) {
  const std::optional<PlannedModelSize> size = planned_model_size(config, data);
  return size ? std::optional<double>(size->parameters) : std::nullopt;
}

TEST(MakeModel, PlannedParameterCountIsTheBuiltModels) {
  const std::vector<DatasetInfo> rows = {{Task::kClassification, {12}, 5},
                                         {Task::kRegression, {3, 4, 4}, 2}};
  for (const char* hidden : {"7", "16,8,4", "1"}) {
    for (const DatasetInfo& data : rows) {
      ModelConfig mlp;
      mlp.hidden = hidden;
      const auto model = make_model(mlp, data);
      EXPECT_EQ(planned_parameter_count(mlp, data), parameters_of(*model)) << hidden;
    }
  }
  const DatasetInfo images{Task::kClassification, {3, 8, 8}, 5};
  for (const auto& [channels, blocks] : std::vector<std::pair<std::string, int64_t>>{
           {"4", 1}, {"4,8", 1}, {"4,4,8", 2}, {"8,4", 3}}) {
    ModelConfig cnn;
    cnn.type = ModelType::kCnn;
    cnn.channels = channels;
    cnn.blocks = blocks;
    const auto model = make_model(cnn, images);
    EXPECT_EQ(planned_parameter_count(cnn, images), parameters_of(*model)) << channels;
  }
  const DatasetInfo tokens{Task::kNextToken, {8}, 20};
  for (const bool tie : {true, false}) {
    ModelConfig gpt = gpt_config(2, 16);
    gpt.block = 12;
    gpt.tie = tie;
    const auto model = make_model(gpt, tokens);
    EXPECT_EQ(planned_parameter_count(gpt, tokens), parameters_of(*model)) << tie;
  }
  ModelConfig scripted;
  scripted.type = ModelType::kTorchScript;
  EXPECT_EQ(planned_parameter_count(scripted, rows.front()), std::nullopt);
}

// The built-in models, small: a GPT of 12 blocks (tied head) and one of 2 (untied), a CNN of two
// stages of two blocks, an MLP of four hidden layers; each with data it reads.
std::vector<std::pair<ModelConfig, DatasetInfo>> small_built_in_models() {
  const ModelConfig gpt = gpt_config(12, 64);
  ModelConfig untied = gpt;
  untied.tie = false;
  untied.n_layer = 2;
  ModelConfig cnn;
  cnn.type = ModelType::kCnn;
  cnn.channels = "4,8";
  cnn.blocks = 2;
  ModelConfig mlp;
  mlp.hidden = "64,64,64,64";
  return {{gpt, {Task::kNextToken, {8}, 20}},
          {untied, {Task::kNextToken, {8}, 20}},
          {cnn, {Task::kClassification, {3, 8, 8}, 5}},
          {mlp, {Task::kClassification, {12}, 5}}};
}

std::string model_name(const ModelConfig& config) {
  return choice_name(config.type) + std::string(config.tie ? "" : ", untied");
}

// make_model(config, data, values), and the most bytes LibTorch's CPU allocator held at once
// for it.
std::pair<std::unique_ptr<Model>, int64_t> build_counted(const ModelConfig& config,
                                                         const DatasetInfo& data,
                                                         ParameterValues values) {
  static testing::CountingAllocator counting;  // outlives the tensors it allocates
  counting.install();
  counting.reset_peak();
  const int64_t before = counting.live();
  auto model = make_model(config, data, values);
  const int64_t peak = counting.peak() - before;
  counting.uninstall();
  return {std::move(model), peak};
}

// The control of the peaks below: a whole build, counted the same way, holds at least every
// parameter's bytes at once (a count that saw nothing would pass any upper bound).
void expect_whole_build_counted(const ModelConfig& config, const DatasetInfo& data, int64_t bytes) {
  const auto [whole, peak] = build_counted(config, data, ParameterValues::kInitialised);
  EXPECT_GE(peak, bytes) << model_name(config) << ": a whole build counted " << peak
                         << " bytes at its peak, under its parameters' " << bytes;
}

// ZeRO-3's eval and predict build the model without values (ParameterValues::kNone): the same
// parameters, names and shapes, none with memory, buffers kept; and each unit's memory is let go
// as soon as the unit is built, so that building never holds more than the embeddings and one
// block. Counted through LibTorch's CPU allocator: the GPT's peak stays under a quarter of its
// parameters' bytes (12 blocks); kept whole, it would be all of them.
TEST(MakeModel, BuiltWithoutValuesNoModelIsEverWhole) {
  for (const auto& [config, data] : small_built_in_models()) {
    const std::string what = model_name(config);
    const auto whole = make_model(config, data);
    int64_t bytes = 0;
    for (const auto& p : whole->named_parameters()) bytes += p.tensor.nbytes();
    expect_whole_build_counted(config, data, bytes);
    const auto [empty, peak] = build_counted(config, data, ParameterValues::kNone);
    const std::vector<NamedTensor> params = empty->named_parameters();
    ASSERT_EQ(names(*empty), names(*whole)) << what;
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(params[i].tensor.sizes(), whole->named_parameters()[i].tensor.sizes()) << what;
      EXPECT_FALSE(storage_held(params[i].tensor)) << what << ": " << params[i].name;
    }
    for (const auto& b : empty->named_buffers()) {
      EXPECT_TRUE(storage_held(b.tensor)) << what << ": " << b.name;
    }
    if (config.type == ModelType::kGpt && config.tie) {
      EXPECT_LT(peak, bytes / 4) << "building held " << peak << " of the parameters' " << bytes
                                 << " bytes at once";
    }
  }
}

// ZeRO-3's training builds the model with its values deferred (ParameterValues::kDeferred): no
// memory at first, and the global generator where a whole build leaves it; materialize() then
// draws any parameters' initial values, here one at a time from the last to the first, with the
// bits the whole build has, and leaves the generator as it was. Built, the GPT held under a
// quarter of its parameters' bytes at once (counted through LibTorch's CPU allocator).
TEST(MakeModel, DeferredValuesAreTheWholeBuildsBitForBit) {
  for (const auto& [config, data] : small_built_in_models()) {
    const std::string what = model_name(config);
    torch::manual_seed(11);
    const auto whole = make_model(config, data);
    const torch::Tensor after_whole = torch::rand({4});  // where the build left the generator
    int64_t bytes = 0;
    for (const auto& p : whole->named_parameters()) bytes += p.tensor.nbytes();
    expect_whole_build_counted(config, data, bytes);  // draws: seeded again below

    torch::manual_seed(11);
    const auto [deferred, peak] = build_counted(config, data, ParameterValues::kDeferred);
    const torch::Tensor built = DeferredValues::generator_now();
    EXPECT_TRUE(torch::equal(torch::rand({4}), after_whole))
        << what << ": the build left the generator elsewhere";
    set_generator_state(at::detail::getDefaultCPUGenerator(), built);

    std::vector<NamedTensor> params = deferred->named_parameters();
    for (const auto& p : params) EXPECT_FALSE(storage_held(p.tensor)) << what << ": " << p.name;
    const torch::Tensor before_materialize = DeferredValues::generator_now();
    for (auto p = params.rbegin(); p != params.rend(); ++p) deferred->materialize({*p});
    EXPECT_TRUE(torch::equal(DeferredValues::generator_now(), before_materialize))
        << what << ": materialize moved the generator";
    const std::vector<NamedTensor> expected = whole->named_parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      ASSERT_TRUE(storage_held(params[i].tensor)) << what << ": " << params[i].name;
      EXPECT_TRUE(torch::equal(params[i].tensor, expected[i].tensor))
          << what << ": " << params[i].name;
    }
    const std::vector<NamedTensor> buffers = deferred->named_buffers();
    for (size_t i = 0; i < buffers.size(); ++i) {
      EXPECT_TRUE(torch::equal(buffers[i].tensor, whole->named_buffers()[i].tensor))
          << what << ": " << buffers[i].name;
    }
    if (config.type == ModelType::kGpt && config.tie) {
      EXPECT_LT(peak, bytes / 4) << "building held " << peak << " of the parameters' " << bytes
                                 << " bytes at once";
    }
  }
}

TEST(MakeModel, RefusesDataTheModelCannotRead) {
  ModelConfig gpt;
  gpt.type = ModelType::kGpt;
  const DatasetInfo rows{Task::kClassification, {32}, 5};
  EXPECT_THROW(make_model(gpt, rows), ConfigError);
  ModelConfig cnn;
  cnn.type = ModelType::kCnn;
  EXPECT_THROW(make_model(cnn, rows), ConfigError);  // flat rows are not images
  cnn.channels = "4,8,16,32,64";
  EXPECT_THROW(make_model(cnn, DatasetInfo{Task::kClassification, {1, 8, 8}, 3}), ConfigError);
  const DatasetInfo tokens{Task::kNextToken, {16}, 50};
  ModelConfig mlp;
  EXPECT_THROW(make_model(mlp, tokens), ConfigError);
  gpt.n_embd = 8;
  gpt.n_head = 2;
  gpt.vocab = 40;  // smaller than the data's 50
  EXPECT_THROW(make_model(gpt, tokens), ConfigError);
  gpt.vocab = 64;
  gpt.block = 8;  // shorter than the windows
  EXPECT_THROW(make_model(gpt, tokens), ConfigError);
  gpt.block = 0;
  EXPECT_EQ(make_model(gpt, tokens)->forward(torch::zeros({1, 16}, torch::kLong)).size(2), 64);
}

// Activation checkpointing needs the model's blocks: a TorchScript model's are not known.
TEST(MakeModel, ActivationCheckpointingOnlyForBuiltInModels) {
  ModelConfig scripted;
  scripted.type = ModelType::kTorchScript;
  scripted.path = "model.pt";  // refused before the file is opened
  scripted.activation_checkpointing = true;
  try {
    make_model(scripted, 4, 2);
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.activation_checkpointing"), std::string::npos);
  }
}

// GPT-2's 50257 tokens on a model padded to 50304 logits (inputs/gpt2_small_16gpu.cfg): the loss
// is the cross-entropy over all logits; fewer logits than the data's vocabulary is an error.
TEST(TaskLoss, NextTokenAcceptsAPaddedVocabulary) {
  const DatasetInfo tokens{Task::kNextToken, {4}, 50};
  const torch::Tensor targets = torch::randint(50, {2, 4}, torch::kLong);
  const torch::Tensor logits = torch::randn({2, 4, 64});
  const double expected =
      torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), targets.reshape({-1}))
          .item<double>();
  EXPECT_NEAR(task_loss(tokens, logits, targets).item<double>(), expected, 1e-6);
  EXPECT_THROW(task_loss(tokens, torch::randn({2, 4, 40}), targets), ConfigError);
}

TEST(Autocast, Bf16InsideTheScopeOnly) {
  const torch::Tensor a = torch::randn({4, 4});
  {
    const AutocastScope scope(Precision::kBf16, torch::kCPU);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  {
    const AutocastScope scope(Precision::kFp32, torch::kCPU);
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  }
  EXPECT_THROW(usable_precision(Precision::kFp16, torch::kCPU), ConfigError);
  EXPECT_EQ(usable_precision(Precision::kBf16, torch::kCPU), Precision::kBf16);
}

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterTheInterval) {
  LossScaler scaler(1024, /*growth_interval=*/3, /*backoff=*/0.5);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 512);
  scaler.update(true);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 512);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 1024);
  scaler.update(true);
  scaler.update(false);  // an overflow restarts the count
  scaler.update(true);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 512);
}

TEST(SpikeGuard, JudgesOnlyAFullWindowAndLowersTheRate) {
  SpikeGuard guard(SpikeGuardOptions{/*factor=*/2.0, /*lr_factor=*/0.5, /*window=*/3});
  EXPECT_FALSE(guard.is_spike(1.0));
  EXPECT_FALSE(guard.is_spike(9.0));  // the window is not full yet: no judgement
  EXPECT_FALSE(guard.is_spike(1.0));
  // mean: 1, then 1 + 0.5 (9 - 1) = 5, then 5 + 0.5 (1 - 5) = 3 (alpha = 2 / (3 + 1)).
  EXPECT_DOUBLE_EQ(guard.mean(), 3.0);
  EXPECT_TRUE(guard.is_spike(6.5));
  EXPECT_DOUBLE_EQ(guard.lr_factor(), 0.5);
  EXPECT_DOUBLE_EQ(guard.mean(), 3.0);  // a spike does not enter the mean
  EXPECT_FALSE(guard.is_spike(5.9));
  EXPECT_DOUBLE_EQ(guard.lr_factor(), 0.5);
  EXPECT_FALSE(SpikeGuard(SpikeGuardOptions{}).is_spike(1e30));
}

}  // namespace
}  // namespace ddpt
