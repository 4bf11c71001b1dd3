// A GPT-style decoder for next-token prediction, named as nanoGPT / GPT-2 (wte, wpe, h.0.ln_1,
// h.0.attn.c_attn, ..., ln_f): token + position embeddings, model.n_layer pre-norm blocks of causal
// self-attention and a 4x-wide GELU MLP, a final layer norm, and an output head that is the token
// embedding transposed (tied, as GPT-2) or a separate lm_head. Forward: token ids [N, T] int64 ->
// logits [N, T, vocab]. share/ddptrain/models/gpt.py is the same architecture in PyTorch.
#pragma once

#include "models/module_model.hpp"

namespace ddpt {

struct GptSpec {
  int64_t vocab = 256;
  int64_t block = 64;  // longest context (position table rows)
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  double dropout = 0.0;
  bool tie = true;
  int64_t window = 0;              // tokens per sample, for the FLOPs estimate; 0 = block
  bool checkpoint_blocks = false;  // model.activation_checkpointing
  ParameterValues values = ParameterValues::kInitialised;
};

class Gpt final : public ModuleModel {
 public:
  // Weights as GPT-2: N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 n_layer)), zero biases.
  explicit Gpt(const GptSpec& spec);
  // The parameters of that GPT, without building it (a double: an absurd deck overflows int64).
  static double parameter_count(const GptSpec& spec);
  torch::Tensor forward(const torch::Tensor& tokens) override;
  std::optional<torch::Tensor> chunked_loss(const torch::Tensor& tokens,
                                            const torch::Tensor& targets, int64_t rows) override;
  std::vector<std::string> unit_prefixes() const override;  // the blocks, h.0. to h.(n-1).
  void run_blocks_through(UnitRunner* runner) override;
  // Keys and values cached per block; prompts of different lengths left-padded.
  Decoding decoding() const override { return Decoding::kCacheWithPadding; }
  std::unique_ptr<TokenDecoder> decoder(const std::vector<int64_t>& padding,
                                        int64_t capacity) override;

 private:
  torch::nn::Module& root() override { return *net_; }
  std::shared_ptr<torch::nn::Module> net_;
  int64_t n_head_;
};

}  // namespace ddpt
