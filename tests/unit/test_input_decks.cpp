// Every deck shipped in inputs/ parses (the CPU-sized ones also run in the deck tests), and the
// 16-GPU GPT-2 deck describes GPT-2 small with a global batch that splits over 16 ranks; the
// fine-tuning deck starts from GPT-2's published weights in GPT-2's shapes.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/batch_size.hpp"
#include "config/parse_config.hpp"
#include "support/inputs_dir.hpp"

namespace ddpt {
namespace {

TEST(InputDecks, EveryDeckParses) {
  int decks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::inputs_dir())) {
    if (entry.path().extension() != ".cfg") continue;
    ++decks;
    EXPECT_NO_THROW(parse_config({entry.path().string()})) << entry.path();
  }
  EXPECT_GE(decks, 6);
}

TEST(InputDecks, Gpt2SmallIsGpt2AndSplitsOver16Ranks) {
  const Config c = parse_config({test::inputs_dir() + "/gpt2_small_16gpu.cfg"});
  EXPECT_EQ(c.model.type, ModelType::kGpt);
  EXPECT_EQ(c.model.n_layer, 12);
  EXPECT_EQ(c.model.n_head, 12);
  EXPECT_EQ(c.model.n_embd, 768);
  EXPECT_EQ(c.data.block, 1024);
  EXPECT_EQ(c.model.vocab, 50304);
  EXPECT_EQ(c.train.precision, Precision::kBf16);
  EXPECT_EQ(per_rank_batch(c.train, 16), 16);
  EXPECT_EQ(per_rank_batch(c.train, 4), 64);
}

TEST(InputDecks, Gpt2FinetuneStartsFromGpt2sWeights) {
  const Config c = parse_config({test::inputs_dir() + "/gpt2_finetune.cfg"});
  EXPECT_EQ(c.model.type, ModelType::kGpt);
  EXPECT_FALSE(c.model.init.empty());
  EXPECT_EQ(c.model.n_layer, 12);
  EXPECT_EQ(c.model.n_head, 12);
  EXPECT_EQ(c.model.n_embd, 768);
  EXPECT_EQ(c.data.block, 1024);
  EXPECT_EQ(c.data.vocab, 50257);
  EXPECT_GE(c.model.vocab, c.data.vocab);
  EXPECT_TRUE(c.model.tie);
}

}  // namespace
}  // namespace ddpt
