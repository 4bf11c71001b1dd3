// The generation loop (generate/generation.hpp): batches made from the prompts alone, and the
// built-in GPT's cached decoding, prompts of different lengths left-padded in one batch, choosing
// the tokens that the whole window's forward chooses for each prompt alone, rows that stop early
// left out of the cache in place.
#include <gtest/gtest.h>

#include <memory>

#include "generate/generation.hpp"
#include "models/gpt.hpp"

namespace ddpt {
namespace {

// The same model without its cache: every new token reruns the whole window.
class WithoutCache final : public Model {
 public:
  explicit WithoutCache(Model& model) : model_(model) {}
  torch::Tensor forward(const torch::Tensor& tokens) override { return model_.forward(tokens); }
  std::vector<NamedTensor> named_parameters() override { return model_.named_parameters(); }
  std::vector<NamedTensor> named_buffers() override { return model_.named_buffers(); }
  void train(bool on) override { model_.train(on); }
  void to(torch::Device device) override { model_.to(device); }
  std::string describe() const override { return model_.describe(); }

 private:
  Model& model_;
};

Prompts some_prompts() {
  // Lengths 3, 5, 3, 1, 5, 3, 2: batches of up to 2 rows of one length.
  const std::vector<int64_t> lengths{3, 5, 3, 1, 5, 3, 2};
  std::vector<int64_t> offsets{0};
  for (const int64_t n : lengths) offsets.push_back(offsets.back() + n);
  torch::manual_seed(3);
  return Prompts("test prompts", torch::randint(0, 50, {offsets.back()}, torch::kLong), offsets);
}

// A GPT of 2 layers, vocabulary 50 and context 16, its weights drawn after manual_seed(seed), in
// eval mode.
std::unique_ptr<Gpt> small_gpt(uint64_t seed) {
  torch::manual_seed(seed);
  GptSpec spec;
  spec.vocab = 50;
  spec.block = 16;
  spec.n_layer = 2;
  spec.n_head = 2;
  spec.n_embd = 32;
  auto gpt = std::make_unique<Gpt>(spec);
  gpt->train(false);
  return gpt;
}

TEST(Generation, BatchesHoldPromptsOfOneLengthInRowOrder) {
  const auto batches = plan_batches(some_prompts(), 2, /*mixed_lengths=*/false);
  const std::vector<std::vector<int64_t>> expected{{3}, {6}, {0, 2}, {5}, {1, 4}};
  EXPECT_EQ(batches, expected);
}

TEST(Generation, MixedBatchesTakeRowsByLengthThenRow) {
  const auto batches = plan_batches(some_prompts(), 3, /*mixed_lengths=*/true);
  const std::vector<std::vector<int64_t>> expected{{3, 6, 0}, {2, 5, 1}, {4}};
  EXPECT_EQ(batches, expected);
}

TEST(Generation, CachedDecodingChoosesWhatTheWholeWindowChooses) {
  const std::unique_ptr<Gpt> model = small_gpt(11);
  Gpt& gpt = *model;
  ASSERT_EQ(gpt.decoding(), Model::Decoding::kCacheWithPadding);
  WithoutCache plain(gpt);
  const Prompts prompts = some_prompts();
  for (const double temperature : {0.0, 1.5}) {
    GenerationOptions options;
    options.sampling = {temperature, 0, 1.0, 5};
    options.max_new_tokens = 9;
    options.context = 12;  // rows of 5 fill it after 7 new tokens
    options.vocab = 50;
    // Row 0's second token (without stops) ends it early, in a batch of three rows (lengths 3, 2
    // and 1, so padded), so that the batch goes on with fewer rows.
    const auto first = generate_batch(plain, prompts, {0}, options, torch::kCPU);
    options.stop = {first[0].tokens.at(1)};
    int64_t ended_early = 0;
    int64_t padded = 0;
    for (const auto& batch : plan_batches(prompts, 3, /*mixed_lengths=*/true)) {
      const auto cached = generate_batch(gpt, prompts, batch, options, torch::kCPU);
      ASSERT_EQ(cached.size(), batch.size());
      for (size_t i = 0; i < cached.size(); ++i) {
        const auto whole = generate_batch(plain, prompts, {batch[i]}, options, torch::kCPU);
        padded += prompts.length(batch[i]) < prompts.length(batch.back()) ? 1 : 0;
        EXPECT_EQ(cached[i].row, whole[0].row);
        EXPECT_EQ(cached[i].tokens, whole[0].tokens) << "row " << cached[i].row;
        EXPECT_EQ(cached[i].finish, whole[0].finish) << "row " << cached[i].row;
        ASSERT_EQ(cached[i].logprobs.size(), whole[0].logprobs.size());
        for (size_t t = 0; t < cached[i].logprobs.size(); ++t) {
          EXPECT_NEAR(cached[i].logprobs[t], whole[0].logprobs[t], 1e-5);
        }
        ended_early += cached[i].finish == Finish::kStopToken ? 1 : 0;
      }
    }
    EXPECT_GT(padded, 0);
    EXPECT_GT(ended_early, 0) << "no row stopped early at temperature " << temperature;
  }
}

// Prompts of one length, several to a batch, through the cache and through the whole window.
TEST(Generation, CachedDecodingOfOneLengthChoosesWhatTheWholeWindowChooses) {
  const std::unique_ptr<Gpt> model = small_gpt(12);
  Gpt& gpt = *model;
  WithoutCache plain(gpt);
  const Prompts prompts = some_prompts();
  GenerationOptions options;
  options.sampling = {0.0, 0, 1.0, 5};
  options.max_new_tokens = 9;
  options.context = 12;
  options.vocab = 50;
  int64_t several = 0;
  for (const auto& batch : plan_batches(prompts, 3, /*mixed_lengths=*/false)) {
    several += batch.size() > 1 ? 1 : 0;
    {
      const auto cached = generate_batch(gpt, prompts, batch, options, torch::kCPU);
      const auto whole = generate_batch(plain, prompts, batch, options, torch::kCPU);
      ASSERT_EQ(cached.size(), whole.size());
      for (size_t i = 0; i < cached.size(); ++i) {
        EXPECT_EQ(cached[i].row, whole[i].row);
        EXPECT_EQ(cached[i].tokens, whole[i].tokens) << "row " << cached[i].row;
        EXPECT_EQ(cached[i].finish, whole[i].finish) << "row " << cached[i].row;
        ASSERT_EQ(cached[i].logprobs.size(), whole[i].logprobs.size());
        for (size_t t = 0; t < cached[i].logprobs.size(); ++t) {
          EXPECT_NEAR(cached[i].logprobs[t], whole[i].logprobs[t], 1e-5);
        }
      }
    }
  }
  EXPECT_GT(several, 0);
}

}  // namespace
}  // namespace ddpt
