#include "data/synthetic_tables.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace ddpt {

at::Generator generator_for(int64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
}

namespace {

// Successors per token in the Markov chain, and how much of the probability goes to them.
constexpr int64_t kSuccessors = 4;
constexpr double kNoiseProbability = 0.1;  // otherwise a uniformly random token
// Noise on regression targets, relative to their O(1) scale.
constexpr double kRegressionNoise = 0.01;

// Inputs, then the teacher's pre-activation outputs [samples, outputs].
Tables teacher(const TeacherSpec& spec, at::Generator& gen) {
  torch::NoGradGuard no_grad;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  Tables t;
  t.inputs = at::randn({spec.samples, spec.features}, gen, f32);
  // Teacher weights scaled by 1/sqrt(fan_in) so its outputs are O(1) and every class occurs.
  const torch::Tensor w1 =
      at::randn({spec.features, spec.teacher_hidden}, gen, f32) / std::sqrt(double(spec.features));
  const torch::Tensor w2 = at::randn({spec.teacher_hidden, spec.outputs}, gen, f32) /
                           std::sqrt(double(spec.teacher_hidden));
  t.targets = torch::tanh(t.inputs.matmul(w1)).matmul(w2);
  return t;
}

}  // namespace

Tables teacher_classification(const TeacherSpec& spec) {
  at::Generator gen = generator_for(spec.seed);
  Tables t = teacher(spec, gen);
  t.targets = t.targets.argmax(1);
  return t;
}

Tables teacher_regression(const TeacherSpec& spec) {
  at::Generator gen = generator_for(spec.seed);
  Tables t = teacher(spec, gen);
  t.targets += kRegressionNoise * at::randn(t.targets.sizes(), gen, t.targets.options());
  return t;
}

torch::Tensor markov_tokens(int64_t tokens, int64_t vocab, int64_t seed) {
  at::Generator gen = generator_for(seed);
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  const torch::Tensor successors = at::randint(vocab, {vocab, kSuccessors}, gen, i64);
  const torch::Tensor pick = at::randint(kSuccessors, {tokens}, gen, i64);
  const torch::Tensor noise = at::rand({tokens}, gen, torch::TensorOptions().dtype(torch::kDouble));
  const torch::Tensor random_token = at::randint(vocab, {tokens}, gen, i64);
  torch::Tensor out = torch::empty({tokens}, i64);
  auto o = out.accessor<int64_t, 1>();
  const auto s = successors.accessor<int64_t, 2>();
  const auto p = pick.accessor<int64_t, 1>();
  const auto n = noise.accessor<double, 1>();
  const auto r = random_token.accessor<int64_t, 1>();
  int64_t current = r[0];
  for (int64_t i = 0; i < tokens; ++i) {
    o[i] = current;
    current = n[i] < kNoiseProbability ? r[i] : s[current][p[i]];
  }
  return out;
}

}  // namespace ddpt
