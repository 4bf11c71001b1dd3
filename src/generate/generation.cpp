#include "generate/generation.hpp"

#include <algorithm>
#include <numeric>

namespace ddpt {
namespace {

bool stops(const GenerationOptions& options, int64_t token) {
  return std::find(options.stop.begin(), options.stop.end(), token) != options.stop.end();
}

// Why `done` ends after its newest token, at `length` tokens in all; none yet: false.
bool finished(const GenerationOptions& options, GeneratedRow& done, int64_t length) {
  if (!done.tokens.empty() && stops(options, done.tokens.back())) {
    done.finish = Finish::kStopToken;
  } else if (static_cast<int64_t>(done.tokens.size()) >= options.max_new_tokens) {
    done.finish = Finish::kMaxNewTokens;
  } else if (length >= options.context) {
    done.finish = Finish::kContextFull;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::vector<int64_t>> plan_batches(const Prompts& prompts, int64_t batch_size,
                                               bool mixed_lengths) {
  std::vector<int64_t> order(static_cast<size_t>(prompts.rows()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return prompts.length(a) < prompts.length(b); });
  std::vector<std::vector<int64_t>> batches;
  for (const int64_t row : order) {
    const bool fits =
        !batches.empty() && static_cast<int64_t>(batches.back().size()) < batch_size &&
        (mixed_lengths || prompts.length(batches.back().front()) == prompts.length(row));
    if (!fits) batches.emplace_back();
    batches.back().push_back(row);
  }
  return batches;
}

namespace {

// The rows of `active` (positions in it) that go on after a token each, and those tokens.
struct GoingOn {
  std::vector<int64_t> at;
  std::vector<int64_t> tokens;
};

// Appends to each active row (indices into `rows`) its next token, chosen from its row of `logits`
// ([active rows, vocab]) at the row's own position (its prompt's length and the tokens since).
GoingOn choose_next(std::vector<GeneratedRow>& rows, const std::vector<int64_t>& active,
                    torch::Tensor logits, const Prompts& prompts,
                    const GenerationOptions& options) {
  if (options.choices > 0 && options.choices < logits.size(1)) {
    logits = logits.narrow(1, 0, options.choices);
  }
  const torch::Tensor host = logits.to(torch::kCPU, torch::kDouble).contiguous();
  const int64_t vocab = host.size(1);
  GoingOn going;
  for (size_t a = 0; a < active.size(); ++a) {
    GeneratedRow& row = rows[active[a]];
    const int64_t position = prompts.length(row.row) + static_cast<int64_t>(row.tokens.size());
    const TokenChoice choice =
        choose_token(host.data_ptr<double>() + static_cast<int64_t>(a) * vocab, vocab,
                     options.sampling, row.row, position);
    row.tokens.push_back(choice.token);
    row.logprobs.push_back(choice.logprob);
    if (finished(options, row, position + 1)) continue;
    going.at.push_back(static_cast<int64_t>(a));
    going.tokens.push_back(choice.token);
  }
  return going;
}

std::vector<int64_t> kept(const std::vector<int64_t>& active, const std::vector<int64_t>& at) {
  std::vector<int64_t> rows;
  for (const int64_t a : at) rows.push_back(active[a]);
  return rows;
}

// Continues rows[active...] with the model's cache: the prompts (left-padded to the longest) in
// one forward, then one slot per new token; the number of forwards it took.
int64_t continue_with_cache(Model& model, std::vector<GeneratedRow>& rows,
                            std::vector<int64_t> active, const Prompts& prompts,
                            const GenerationOptions& options, torch::Device device) {
  int64_t longest = 0;
  for (const int64_t a : active) longest = std::max(longest, prompts.length(rows[a].row));
  std::vector<int64_t> padding;
  std::vector<torch::Tensor> padded;
  int64_t capacity = 0;  // the most slots a row fills
  for (const int64_t a : active) {
    const int64_t length = prompts.length(rows[a].row);
    const int64_t before = longest - length;
    padding.push_back(before);
    padded.push_back(torch::constant_pad_nd(prompts.row(rows[a].row), {before, 0}));
    capacity =
        std::max(capacity, before + std::min(length + options.max_new_tokens, options.context));
  }
  std::unique_ptr<TokenDecoder> decoder = model.decoder(padding, capacity);
  torch::Tensor fed = torch::stack(padded).to(device);
  int64_t forwards = 0;
  while (true) {
    const GoingOn going = choose_next(rows, active, decoder->step(fed), prompts, options);
    ++forwards;
    if (going.at.empty()) return forwards;
    if (going.at.size() < active.size()) {
      decoder->keep_rows(going.at);
      active = kept(active, going.at);
    }
    fed = torch::tensor(going.tokens, torch::kLong).to(device).unsqueeze(1);
  }
}

// Continues rows[active...] (prompts of one length) by running the whole window for each new
// token; the number of forwards it took.
int64_t continue_whole_windows(Model& model, std::vector<GeneratedRow>& rows,
                               std::vector<int64_t> active, const Prompts& prompts,
                               const GenerationOptions& options, torch::Device device) {
  std::vector<torch::Tensor> windows;
  for (const int64_t a : active) windows.push_back(prompts.row(rows[a].row));
  torch::Tensor window = torch::stack(windows).to(device);
  int64_t forwards = 0;
  while (true) {
    const GoingOn going = choose_next(
        rows, active, model.forward(window).select(1, window.size(1) - 1), prompts, options);
    ++forwards;
    if (going.at.empty()) return forwards;
    if (going.at.size() < active.size()) {
      window = window.index_select(0, torch::tensor(going.at, torch::kLong).to(device));
      active = kept(active, going.at);
    }
    window =
        torch::cat({window, torch::tensor(going.tokens, torch::kLong).to(device).unsqueeze(1)}, 1);
  }
}

}  // namespace

int64_t most_forwards(const Prompts& prompts, const std::vector<int64_t>& batch,
                      const GenerationOptions& options) {
  int64_t most = 0;
  for (const int64_t row : batch) {
    most = std::max(most, std::min(options.max_new_tokens, options.context - prompts.length(row)));
  }
  return most;
}

std::vector<GeneratedRow> generate_batch(Model& model, const Prompts& prompts,
                                         const std::vector<int64_t>& batch,
                                         const GenerationOptions& options, torch::Device device,
                                         int64_t lockstep_forwards) {
  // Inference mode, not only no gradients: no view or version bookkeeping on the many small
  // tensors of one-token forwards (the caches are made here and never leave). Not for a model
  // whose forwards gather sharded parameters, whose buffers outlive the batch.
  const c10::InferenceMode inference(!model.forwards_in_lockstep());
  const torch::NoGradGuard no_grad;
  std::vector<GeneratedRow> rows(batch.size());
  std::vector<int64_t> active;  // indices into rows, of the rows still generating
  for (size_t i = 0; i < batch.size(); ++i) {
    rows[i].row = batch[i];
    if (!finished(options, rows[i], prompts.length(batch[i]))) {
      active.push_back(static_cast<int64_t>(i));
    }
  }
  int64_t forwards = 0;
  if (!active.empty()) {
    forwards = model.decoding() == Model::Decoding::kWholeWindow
                   ? continue_whole_windows(model, rows, active, prompts, options, device)
                   : continue_with_cache(model, rows, active, prompts, options, device);
  }
  // In lockstep: forwards of one token that count for nothing, as many as the other ranks may
  // still make in this round.
  for (; forwards < lockstep_forwards; ++forwards) {
    model.forward(torch::zeros({1, 1}, torch::kLong).to(device));
  }
  return rows;
}

}  // namespace ddpt
