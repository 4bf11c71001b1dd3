// Synthetic data a model can really learn, generated from a seed alone (identical on every rank
// and for every rank count): what data.type = synthetic trains on and what `ddptrain make-data`
// writes to HDF5 files.
#pragma once

#include <torch/torch.h>

namespace ddpt {

// A CPU random generator of its own (the global one is left alone), seeded with `seed`.
at::Generator generator_for(int64_t seed);

struct TeacherSpec {
  int64_t samples = 16384;
  int64_t features = 256;
  int64_t outputs = 10;  // classes, or regression targets per sample
  int64_t teacher_hidden = 64;
  int64_t seed = 1234;
};

struct Tables {
  torch::Tensor inputs;   // [samples, features] float32, x ~ N(0, 1)
  torch::Tensor targets;  // see below
};

// targets [samples] int64 = argmax of a random two-layer tanh teacher network.
Tables teacher_classification(const TeacherSpec& spec);
// targets [samples, outputs] float32 = the teacher's outputs plus 1% Gaussian noise.
Tables teacher_regression(const TeacherSpec& spec);
// A token stream [tokens] int64 from a sparse random Markov chain (each token has a few likely
// successors), so that even a bigram model's loss falls well below log(vocab).
torch::Tensor markov_tokens(int64_t tokens, int64_t vocab, int64_t seed);

}  // namespace ddpt
