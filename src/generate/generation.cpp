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

std::vector<std::vector<int64_t>> plan_batches(const Prompts& prompts, int64_t batch_size) {
  std::vector<int64_t> order(static_cast<size_t>(prompts.rows()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return prompts.length(a) < prompts.length(b); });
  std::vector<std::vector<int64_t>> batches;
  for (const int64_t row : order) {
    const bool fits = !batches.empty() &&
                      static_cast<int64_t>(batches.back().size()) < batch_size &&
                      prompts.length(batches.back().front()) == prompts.length(row);
    if (!fits) batches.emplace_back();
    batches.back().push_back(row);
  }
  return batches;
}

namespace {

// Continues rows[active...] (prompts of one length, in `window`) until each has finished; the
// number of forwards it took.
int64_t continue_rows(Model& model, std::vector<GeneratedRow>& rows, std::vector<int64_t> active,
                      torch::Tensor window, const GenerationOptions& options,
                      torch::Device device) {
  // With a cache, the prompts run once and each later forward is the new tokens' alone.
  std::unique_ptr<TokenDecoder> decoder =
      model.decoder(static_cast<int64_t>(active.size()), options.context);
  torch::Tensor fed = window;  // what the next forward runs
  int64_t forwards = 0;
  while (!active.empty()) {
    const int64_t position = window.size(1);  // of the token chosen now
    torch::Tensor logits =
        decoder ? decoder->step(fed) : model.forward(window).select(1, position - 1);
    if (options.choices > 0 && options.choices < logits.size(1)) {
      logits = logits.narrow(1, 0, options.choices);
    }
    const torch::Tensor last = logits.to(torch::kCPU, torch::kDouble).contiguous();
    ++forwards;
    const int64_t vocab = last.size(1);
    std::vector<int64_t> chosen;
    std::vector<int64_t> still;  // positions in `active` of the rows that go on
    for (size_t a = 0; a < active.size(); ++a) {
      GeneratedRow& row = rows[active[a]];
      const TokenChoice choice =
          choose_token(last.data_ptr<double>() + static_cast<int64_t>(a) * vocab, vocab,
                       options.sampling, row.row, position);
      row.tokens.push_back(choice.token);
      row.logprobs.push_back(choice.logprob);
      if (finished(options, row, position + 1)) continue;
      still.push_back(static_cast<int64_t>(a));
      chosen.push_back(choice.token);
    }
    if (still.empty()) break;
    fed = torch::tensor(chosen, torch::kLong).to(device).unsqueeze(1);
    if (still.size() < active.size()) {
      window = window.index_select(0, torch::tensor(still, torch::kLong).to(device));
      if (decoder) decoder->keep_rows(still);
    }
    window = torch::cat({window, fed}, 1);
    std::vector<int64_t> going_on;
    for (const int64_t a : still) going_on.push_back(active[a]);
    active = std::move(going_on);
  }
  return forwards;
}

}  // namespace

int64_t most_forwards(const Prompts& prompts, const std::vector<int64_t>& batch,
                      const GenerationOptions& options) {
  if (batch.empty()) return 0;
  const int64_t room = options.context - prompts.length(batch.front());
  return std::max<int64_t>(0, std::min(options.max_new_tokens, room));
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
  std::vector<torch::Tensor> prompt_tokens;
  for (size_t i = 0; i < batch.size(); ++i) {
    rows[i].row = batch[i];
    if (finished(options, rows[i], prompts.length(batch[i]))) continue;
    active.push_back(static_cast<int64_t>(i));
    prompt_tokens.push_back(prompts.row(batch[i]));
  }
  int64_t forwards = 0;
  if (!active.empty()) {
    forwards =
        continue_rows(model, rows, active, torch::stack(prompt_tokens).to(device), options, device);
  }
  // In lockstep: forwards of one token that count for nothing, as many as the other ranks may
  // still make in this round.
  for (; forwards < lockstep_forwards; ++forwards) {
    model.forward(torch::zeros({1, 1}, torch::kLong).to(device));
  }
  return rows;
}

}  // namespace ddpt
