// Evaluation of a model on a dataset, shared by all ranks: each rank takes a contiguous share of
// the rows, and the sums are reduced, so the result is that of the whole dataset on any rank count.
#pragma once

#include <cstdint>
#include <string>

#include "comm/communicator.hpp"
#include "data/dataset.hpp"
#include "models/model.hpp"

namespace ddpt {

struct EvalResult {
  double loss = 0;      // mean over samples / target values / tokens, as in training
  double accuracy = 0;  // classification and next-token; 0 for regression
  int64_t samples = 0;  // rows evaluated (over all ranks)
};

// Rows [first, first + count) of `rows` that `rank` of `world` takes: contiguous shares whose
// sizes differ by at most one.
std::pair<int64_t, int64_t> share_of_rows(int64_t rows, int rank, int world);

// The forwards a rank runs over its `rows` in batches of `batch`: as many as its rows need, or, for
// a model whose forwards run in lockstep (Model::forwards_in_lockstep), as many as the rank with
// the most rows (`most_rows`) needs.
int64_t forwards_over(const Model& model, int64_t rows, int64_t most_rows, int64_t batch);

// Collective: evaluates `model` (in eval mode, without gradients; its mode is restored) on all of
// `data` in batches of `batch` rows per rank.
EvalResult evaluate(Model& model, const Dataset& data, Communicator& comm, int64_t batch);

// "loss 0.41230  accuracy 0.8812" (perplexity for next-token data).
std::string describe_eval(const EvalResult& result, Task task);

}  // namespace ddpt
