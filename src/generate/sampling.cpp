#include "generate/sampling.hpp"

#include <ATen/core/PhiloxRNGEngine.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "util/error.hpp"

namespace ddpt {
namespace {

// log(sum(exp(values))) without overflow.
double log_sum_exp(const double* values, int64_t count) {
  const double top = *std::max_element(values, values + count);
  if (!std::isfinite(top)) return top;
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += std::exp(values[i] - top);
  return top + std::log(sum);
}

// Token ids ordered by `values`, largest first; equal values by id, so the order is the same on
// every machine.
std::vector<int64_t> by_value(const std::vector<double>& values) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return values[a] > values[b]; });
  return order;
}

// The sampling distribution's weights (unnormalised), by token id: zero outside top_k and top_p.
std::vector<double> sampling_weights(const std::vector<double>& logits,
                                     const SamplingOptions& options) {
  const auto vocab = static_cast<int64_t>(logits.size());
  std::vector<double> scaled(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) scaled[i] = logits[i] / options.temperature;
  const double total = log_sum_exp(scaled.data(), static_cast<int64_t>(scaled.size()));
  std::vector<double> weights(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) weights[i] = std::exp(scaled[i] - total);
  const bool cut_k = options.top_k > 0 && options.top_k < vocab;
  if (!cut_k && options.top_p >= 1) return weights;
  const std::vector<int64_t> order = by_value(scaled);
  const int64_t keep_k = cut_k ? options.top_k : vocab;
  double kept_mass = 0;
  for (int64_t k = 0; k < keep_k; ++k) kept_mass += weights[order[k]];
  // Nucleus over what top_k kept, renormalised: the smallest prefix whose mass reaches top_p.
  double mass = 0;
  int64_t kept = 0;
  while (kept < keep_k && (kept == 0 || mass < options.top_p * kept_mass)) {
    mass += weights[order[kept]];
    ++kept;
  }
  for (int64_t k = kept; k < vocab; ++k) weights[order[k]] = 0;
  return weights;
}

}  // namespace

double uniform_draw(int64_t seed, int64_t row, int64_t position) {
  at::Philox4_32 engine(static_cast<uint64_t>(seed), static_cast<uint64_t>(row),
                        static_cast<uint64_t>(position));
  const uint64_t high = engine() >> 5;  // 27 bits
  const uint64_t low = engine() >> 6;   // 26 bits
  return static_cast<double>((high << 26) | low) * 0x1p-53;
}

TokenChoice choose_token(const double* logits, int64_t vocab, const SamplingOptions& options,
                         int64_t row, int64_t position) {
  const double* end = logits + vocab;
  const double log_total = log_sum_exp(logits, vocab);
  if (!std::isfinite(log_total)) {
    throw Error(
        fmt::format("row {}: the model's logits at position {} are not finite", row, position),
        ExitCode::kNumerical, Raised::kThisRank);
  }
  int64_t token = 0;
  if (options.temperature == 0) {
    token = std::max_element(logits, end) - logits;
  } else {
    const std::vector<double> weights = sampling_weights(std::vector<double>(logits, end), options);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    const double target = uniform_draw(options.seed, row, position) * total;
    double cumulative = 0;
    token = -1;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (weights[i] == 0) continue;
      token = static_cast<int64_t>(i);  // the last token with weight, should rounding leave any
      cumulative += weights[i];
      if (target < cumulative) break;
    }
  }
  return {token, logits[token] - log_total};
}

TokenChoice choose_token(const torch::Tensor& logits, const SamplingOptions& options, int64_t row,
                         int64_t position) {
  const torch::Tensor values = logits.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return choose_token(values.data_ptr<double>(), values.numel(), options, row, position);
}

}  // namespace ddpt
