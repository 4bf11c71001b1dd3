#include "models/gpt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/activation_checkpoint.hpp"
#include "models/cached_attention.hpp"
#include "models/causal_attention.hpp"
#include "models/chunked_cross_entropy.hpp"
#include "models/linear.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

torch::Tensor maybe_dropout(const torch::Tensor& x, double p, bool training) {
  return p > 0 && training ? F::dropout(x, F::DropoutFuncOptions().p(p).training(true)) : x;
}

class CausalSelfAttentionImpl : public nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const GptSpec& spec)
      : c_attn_(register_module("c_attn", Linear(spec.n_embd, 3 * spec.n_embd))),
        c_proj_(register_module("c_proj", Linear(spec.n_embd, spec.n_embd))),
        n_head_(spec.n_head),
        dropout_(spec.dropout) {}

  // Decoding: the new slots' rows x [N T, C] (T new slots of N rows, after `start` cached ones),
  // their keys and values written into `cache` ([2, rows >= N, heads, capacity, head_dim]) and
  // attended to with the cached ones. `bias` ([N heads or 1, T or 1, start + T]) is added to the
  // scores: -inf where a slot may not be seen (a later one, a row's padding), else 0.
  torch::Tensor decode(const torch::Tensor& x, int64_t rows, const torch::Tensor& cache,
                       int64_t start, const torch::Tensor& bias) {
    const int64_t width = x.size(1);
    const int64_t time = x.size(0) / rows;
    const int64_t head_dim = width / n_head_;
    const int64_t length = start + time;
    const int64_t pairs = rows * n_head_;  // (row, head): the batch of the attention's products
    const torch::Tensor qkv = c_attn_(x).view({rows, time, 3, n_head_, head_dim});
    const torch::Tensor mine = cache.narrow(1, 0, rows);
    // Keys and values in one copy: [N, T, 2, heads, head_dim] -> [2, N, heads, T, head_dim].
    mine.narrow(3, start, time).copy_(qkv.narrow(2, 1, 2).permute({2, 0, 3, 1, 4}));
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    if (time == 1 && cached_attention_available(x)) {  // each new token's, on the CPU
      return c_proj_(cached_attention(
          qkv.select(1, 0).select(1, 0), mine.select(0, 0).narrow(2, 0, length),
          mine.select(0, 1).narrow(2, 0, length), bias, static_cast<float>(scale)));
    }
    const torch::Tensor q = qkv.select(2, 0).transpose(1, 2).reshape({pairs, time, head_dim});
    const torch::Tensor keys =
        mine.select(0, 0).narrow(2, 0, length).view({pairs, length, head_dim});
    const torch::Tensor values =
        mine.select(0, 1).narrow(2, 0, length).view({pairs, length, head_dim});
    // bias + q.k / sqrt(head_dim) in one product: per token, the fewer small ops the better.
    const torch::Tensor scores =
        at::baddbmm(bias, q, keys.transpose(1, 2), /*beta=*/1, /*alpha=*/scale);
    const torch::Tensor y = at::bmm(at::softmax(scores, -1), values);
    return c_proj_(
        y.view({rows, n_head_, time, head_dim}).transpose(1, 2).reshape({rows * time, width}));
  }

  // x: [N T, C], the rows of `windows` windows in order.
  torch::Tensor forward(const torch::Tensor& x, int64_t windows) {
    const int64_t width = x.size(1);
    const torch::Tensor qkv = c_attn_(x).view({windows, -1, 3 * width});
    const torch::Tensor y =
        causal_self_attention(qkv, n_head_, dropout_, is_training()).view({-1, width});
    return maybe_dropout(c_proj_(y), dropout_, is_training());
  }

 private:
  Linear c_attn_;
  Linear c_proj_;
  int64_t n_head_;
  double dropout_;
};
TORCH_MODULE(CausalSelfAttention);

class FeedForwardImpl : public nn::Module {
 public:
  explicit FeedForwardImpl(const GptSpec& spec)
      : c_fc_(register_module("c_fc", Linear(spec.n_embd, 4 * spec.n_embd))),
        c_proj_(register_module("c_proj", Linear(4 * spec.n_embd, spec.n_embd))),
        dropout_(spec.dropout) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return maybe_dropout(c_proj_(torch::gelu(c_fc_(x))), dropout_, is_training());
  }

 private:
  Linear c_fc_;
  Linear c_proj_;
  double dropout_;
};
TORCH_MODULE(FeedForward);

class BlockImpl : public nn::Module {
 public:
  explicit BlockImpl(const GptSpec& spec)
      : ln_1_(register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({spec.n_embd})))),
        attn_(register_module("attn", CausalSelfAttention(spec))),
        ln_2_(register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({spec.n_embd})))),
        mlp_(register_module("mlp", FeedForward(spec))) {}
  torch::Tensor forward(torch::Tensor x, int64_t windows) {
    x = x + attn_(ln_1_(x), windows);
    return x + mlp_(ln_2_(x));
  }
  torch::Tensor decode(torch::Tensor x, int64_t rows, const torch::Tensor& cache, int64_t start,
                       const torch::Tensor& bias) {
    x = x + attn_->decode(ln_1_(x), rows, cache, start, bias);
    return x + mlp_(ln_2_(x));
  }

 private:
  nn::LayerNorm ln_1_;
  CausalSelfAttention attn_;
  nn::LayerNorm ln_2_;
  FeedForward mlp_;
};
TORCH_MODULE(Block);

class GptNetImpl : public nn::Module {
 public:
  // `deferred`: where ParameterValues::kDeferred records how the initial values are drawn.
  GptNetImpl(const GptSpec& spec, DeferredValues& deferred)
      : wte_(register_module("wte", nn::Embedding(spec.vocab, spec.n_embd))),
        wpe_(register_module("wpe", nn::Embedding(spec.block, spec.n_embd))),
        dropout_(spec.dropout),
        block_(spec.block),
        checkpoint_blocks_(spec.checkpoint_blocks) {
    // Without values, every unit's memory goes as soon as it is built; its construction still
    // draws, so the generator moves as in a whole build (initialise() replaces those values).
    const bool values = spec.values == ParameterValues::kInitialised;
    if (!values) release_parameters(*this);  // the embeddings
    for (int64_t i = 0; i < spec.n_layer; ++i) {
      h_->push_back(Block(spec));
      if (!values) release_parameters(*h_->ptr(h_->size() - 1));
    }
    register_module("h", h_);
    ln_f_ = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({spec.n_embd})));
    if (!spec.tie) {
      lm_head_ = register_module("lm_head",
                                 Linear(nn::LinearOptions(spec.n_embd, spec.vocab).bias(false)));
    }
    if (values) {
      initialise(spec);
      return;
    }
    release_parameters(*this);
    if (spec.values == ParameterValues::kDeferred) defer_initialise(spec, deferred);
  }

  torch::Tensor forward(const torch::Tensor& tokens) {
    return ddpt::linear(hidden(tokens), head_weight()).view({tokens.size(0), tokens.size(1), -1});
  }

  // The last layer norm's output, one row per token: [N T, C].
  torch::Tensor hidden(const torch::Tensor& tokens) {
    const int64_t windows = tokens.size(0);
    const int64_t time = tokens.size(1);
    if (time > block_) {
      throw ConfigError(
          fmt::format("GPT: windows of {} tokens exceed model.block = {}", time, block_));
    }
    const torch::Tensor positions =
        torch::arange(time, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
    torch::Tensor x = maybe_dropout(wte_(tokens) + wpe_(positions), dropout_, is_training());
    // The blocks work on [N T, C] rows: one GEMM per linear layer with the bias inside it
    // (LibTorch's linear, where it runs, is one addmm on 2-D input only; on [N, T, C] it runs
    // matmul and then a second pass over the output to add the bias).
    x = x.view({windows * time, -1});
    for (size_t i = 0; i < h_->size(); ++i) {
      auto block = h_->ptr<BlockImpl>(i);
      auto run = [block, windows](const torch::Tensor& in) { return block->forward(in, windows); };
      auto kept = [this, run](const torch::Tensor& in) {
        return checkpoint_blocks_ ? checkpointed(run, in) : run(in);
      };
      x = run_unit(runner_, i, kept, x);
    }
    return ln_f_(x);
  }

  // Decoding (TokenDecoder): tokens [N, T] in slots [start, start + T) through every block,
  // layer l's keys and values in caches[l]; the logits of each row's last slot [N, vocab].
  // `positions` [N, T] are the slots' positions, or undefined where every row's are the slots'
  // own; `bias` as CausalSelfAttention's decode takes it.
  torch::Tensor decode(const torch::Tensor& tokens, const std::vector<torch::Tensor>& caches,
                       int64_t start, const torch::Tensor& positions, const torch::Tensor& bias) {
    const int64_t rows = tokens.size(0);
    const int64_t time = tokens.size(1);
    torch::Tensor x = wte_(tokens) +
                      (positions.defined() ? wpe_(positions) : wpe_->weight.narrow(0, start, time));
    x = x.view({rows * time, -1});
    for (size_t i = 0; i < h_->size(); ++i) {
      x = h_->ptr<BlockImpl>(i)->decode(x, rows, caches[i], start, bias);
    }
    const torch::Tensor last = ln_f_(x.view({rows, time, -1}).select(1, time - 1));
    return ddpt::linear(last, head_weight());
  }
  // One cache per block: [2 (keys, values), rows, heads, capacity, head_dim].
  std::vector<torch::Tensor> make_caches(int64_t rows, int64_t capacity, int64_t n_head) const {
    const torch::Tensor& any = wte_->weight;
    const int64_t head_dim = any.size(1) / n_head;
    std::vector<torch::Tensor> caches;
    for (size_t i = 0; i < h_->size(); ++i) {
      caches.push_back(torch::empty({2, rows, n_head, capacity, head_dim}, any.options()));
    }
    return caches;
  }

  std::vector<std::string> block_prefixes() const {
    std::vector<std::string> prefixes;
    for (size_t i = 0; i < h_->size(); ++i) prefixes.push_back("h." + std::to_string(i) + ".");
    return prefixes;
  }
  void run_blocks_through(UnitRunner* runner) { runner_ = runner; }

  int64_t block() const { return block_; }

  // The head's weight [vocab, C]: the token embedding's (tied, as GPT-2) or lm_head's.
  const torch::Tensor& head_weight() const { return lm_head_ ? lm_head_->weight : wte_->weight; }

 private:
  // GPT-2's initial value of parameter `name`: layer norms' weight 1 and bias 0 (as built), other
  // biases 0, residual projections N(0, 0.02 / sqrt(2 n_layer)), the rest N(0, 0.02).
  struct Initial {
    enum Kind { kOne, kZero, kNormal } kind = kNormal;
    double std = 0;
    void apply(torch::Tensor& p) const {
      if (kind == kOne) {
        p.fill_(1);
      } else if (kind == kZero) {
        p.zero_();
      } else {
        p.normal_(0.0, std);
      }
    }
  };
  static Initial initial(const std::string& name, const GptSpec& spec) {
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (name.find("ln_") != std::string::npos) return {bias ? Initial::kZero : Initial::kOne};
    if (bias) return {Initial::kZero};
    if (name.find("c_proj.weight") != std::string::npos) {
      return {Initial::kNormal, 0.02 / std::sqrt(2.0 * static_cast<double>(spec.n_layer))};
    }
    return {Initial::kNormal, 0.02};
  }

  void initialise(const GptSpec& spec) {
    torch::NoGradGuard no_grad;
    for (auto& item : named_parameters()) initial(item.key(), spec).apply(item.value());
  }

  // initialise(), recorded instead of done: each draw's generator state, the generator moved past
  // the draw as initialise() moves it (a draw into a scratch tensor of the parameter's shape).
  void defer_initialise(const GptSpec& spec, DeferredValues& deferred) {
    torch::NoGradGuard no_grad;
    for (auto& item : named_parameters()) {
      const Initial init = initial(item.key(), spec);
      torch::Tensor p = item.value();
      torch::Tensor state;
      if (init.kind == Initial::kNormal) {
        state = DeferredValues::generator_now();
        torch::Tensor scratch = torch::empty(p.sizes(), p.options().requires_grad(false));
        init.apply(scratch);
      }
      deferred.add({{p}, std::move(state), [p, init]() mutable { init.apply(p); }});
    }
  }

  nn::Embedding wte_;
  nn::Embedding wpe_;
  nn::ModuleList h_;
  nn::LayerNorm ln_f_{nullptr};
  Linear lm_head_{nullptr};
  double dropout_;
  int64_t block_;
  bool checkpoint_blocks_;        // each block's activations recomputed in backward
  UnitRunner* runner_ = nullptr;  // ZeRO-3: gathers each block's parameters
};
TORCH_MODULE(GptNet);

// Keys and values cached per block; rows left-padded where their prompts' lengths differ
// (models/token_decoder.hpp). Padding makes two things per row: the positions of its slots
// (slot - padding, the padding's clamped to 0) and a score bias hiding its padding slots.
class GptDecoder final : public TokenDecoder {
 public:
  GptDecoder(GptNetImpl& net, const std::vector<int64_t>& padding, int64_t capacity, int64_t n_head)
      : net_(net),
        caches_(net.make_caches(static_cast<int64_t>(padding.size()), capacity, n_head)),
        padding_(padding),
        n_head_(n_head) {
    const torch::TensorOptions slots = torch::TensorOptions(torch::kLong).device(device());
    nothing_hidden_ = torch::zeros({1, 1, 1}, caches_.front().options());
    if (std::any_of(padding_.begin(), padding_.end(), [](int64_t before) { return before > 0; })) {
      positions_ = (torch::arange(capacity, slots).unsqueeze(0) -
                    torch::tensor(padding_, torch::kLong).to(device()).unsqueeze(1))
                       .clamp_min(0);
    }
    hide_padding();
  }
  torch::Tensor step(const torch::Tensor& tokens) override {
    const int64_t time = tokens.size(1);
    const int64_t least_padding = *std::min_element(padding_.begin(), padding_.end());
    if (length_ + time - least_padding > net_.block()) {
      throw ConfigError(fmt::format("GPT: {} positions exceed model.block = {}",
                                    length_ + time - least_padding, net_.block()));
    }
    const torch::Tensor positions =
        padded() ? positions_.narrow(1, length_, time) : torch::Tensor();
    torch::Tensor logits = net_.decode(tokens, caches_, length_, positions, bias(time));
    length_ += time;
    return logits;
  }
  void keep_rows(const std::vector<int64_t>& kept) override {
    // Ascending, so row kept[i] >= i: each copy reads a row no earlier copy has written.
    for (size_t i = 0; i < kept.size(); ++i) {
      if (kept[i] == static_cast<int64_t>(i)) continue;
      for (const torch::Tensor& cache : caches_) {
        cache.select(1, static_cast<int64_t>(i))
            .narrow(2, 0, length_)
            .copy_(cache.select(1, kept[i]).narrow(2, 0, length_));
      }
    }
    if (!padded()) {
      padding_.resize(kept.size());
      return;
    }
    std::vector<int64_t> padding;
    for (const int64_t row : kept) padding.push_back(padding_[row]);
    padding_ = std::move(padding);
    positions_ = positions_.index_select(0, torch::tensor(kept, torch::kLong).to(device()));
    hide_padding();
  }

 private:
  torch::Device device() const { return caches_.front().device(); }
  bool padded() const { return positions_.defined(); }

  // The bias of the scores of `time` new slots after length_ cached ones: [1, 1, 1] of zeros for
  // one new slot without padding; else -inf on each later slot, and on each padding slot but a
  // padding slot's own (whose output is never used, but must not be 0/0).
  torch::Tensor bias(int64_t time) const {
    const int64_t length = length_ + time;
    if (time == 1) return hidden_.defined() ? hidden_.narrow(2, 0, length) : nothing_hidden_;
    const torch::TensorOptions slots = torch::TensorOptions(torch::kLong).device(device());
    const torch::Tensor seen = torch::arange(length, slots);                         // [L]
    const torch::Tensor query = torch::arange(length_, length, slots).unsqueeze(1);  // [T, 1]
    torch::Tensor hidden = seen > query;                                             // [T, L]
    if (padded()) {
      const torch::Tensor first =
          torch::tensor(padding_, torch::kLong).to(device()).view({-1, 1, 1});  // [N, 1, 1]
      hidden = hidden | ((seen < first) & (seen != query));                     // [N, T, L]
      hidden = hidden.repeat_interleave(n_head_, 0);
    } else {
      hidden = hidden.unsqueeze(0);
    }
    return torch::zeros(hidden.sizes(), caches_.front().options())
        .masked_fill_(hidden, -std::numeric_limits<double>::infinity());
  }
  // hidden_: [N heads, 1, capacity], -inf on each row's padding slots (what a new slot may not
  // see); undefined without padding.
  void hide_padding() {
    if (!padded()) return;
    const int64_t capacity = caches_.front().size(3);
    const torch::TensorOptions slots = torch::TensorOptions(torch::kLong).device(device());
    const torch::Tensor before = torch::arange(capacity, slots).unsqueeze(0) <
                                 torch::tensor(padding_, torch::kLong).to(device()).unsqueeze(1);
    hidden_ = torch::zeros({static_cast<int64_t>(padding_.size()), 1, capacity},
                           caches_.front().options())
                  .masked_fill_(before.unsqueeze(1), -std::numeric_limits<double>::infinity())
                  .repeat_interleave(n_head_, 0);
  }

  GptNetImpl& net_;
  std::vector<torch::Tensor> caches_;
  std::vector<int64_t> padding_;  // per row, the slots before its prompt
  torch::Tensor positions_;       // [N, capacity]: each slot's position; undefined without padding
  torch::Tensor hidden_;
  torch::Tensor nothing_hidden_;
  int64_t n_head_;
  int64_t length_ = 0;  // slots cached
};

}  // namespace

Gpt::Gpt(const GptSpec& spec) : n_head_(spec.n_head) {
  net_ = GptNet(spec, deferred_).ptr();
  const double d = static_cast<double>(spec.n_embd);
  const double t = static_cast<double>(spec.window > 0 ? spec.window : spec.block);
  const double layers = static_cast<double>(spec.n_layer);
  // Per token: 12 d^2 weights per block (qkv 3, proj 1, MLP 8) and the head; attention scores
  // and their use on the values are 2 x T x d multiply-adds per layer (counted in full, causal
  // masking not subtracted, as in the PaLM MFU convention).
  const double per_token =
      2.0 * (12.0 * d * d * layers + d * static_cast<double>(spec.vocab)) + 4.0 * t * d * layers;
  flops_ = per_token * t;
  description_ =
      fmt::format("GPT {} layers x {} heads x {} wide, context {}, vocab {}{}{}", spec.n_layer,
                  spec.n_head, spec.n_embd, spec.block, spec.vocab, spec.tie ? ", tied head" : "",
                  spec.dropout > 0 ? fmt::format(", dropout {}", spec.dropout) : std::string());
}

torch::Tensor Gpt::forward(const torch::Tensor& tokens) {
  return static_cast<GptNetImpl&>(*net_).forward(tokens);
}

std::optional<torch::Tensor> Gpt::chunked_loss(const torch::Tensor& tokens,
                                               const torch::Tensor& targets, int64_t rows) {
  auto& net = static_cast<GptNetImpl&>(*net_);
  return chunked_cross_entropy(net.hidden(tokens), net.head_weight(), targets.reshape({-1}), rows);
}

std::unique_ptr<TokenDecoder> Gpt::decoder(const std::vector<int64_t>& padding, int64_t capacity) {
  return std::make_unique<GptDecoder>(static_cast<GptNetImpl&>(*net_), padding, capacity, n_head_);
}

std::vector<std::string> Gpt::unit_prefixes() const {
  return static_cast<const GptNetImpl&>(*net_).block_prefixes();
}

void Gpt::run_blocks_through(UnitRunner* runner) {
  static_cast<GptNetImpl&>(*net_).run_blocks_through(runner);
}

double Gpt::parameter_count(const GptSpec& spec) {
  const double d = static_cast<double>(spec.n_embd);
  const double vocab = static_cast<double>(spec.vocab);
  // Per block: two layer norms (4 d), qkv (3 d^2 + 3 d), projection (d^2 + d), MLP (8 d^2 + 5 d).
  const double per_block = 12 * d * d + 13 * d;
  const double embeddings = (vocab + static_cast<double>(spec.block)) * d;
  const double head = spec.tie ? 0 : vocab * d;
  return embeddings + static_cast<double>(spec.n_layer) * per_block + 2 * d + head;
}

}  // namespace ddpt
