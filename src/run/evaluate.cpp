#include "run/evaluate.hpp"

#include <fmt/format.h>

#include <cmath>

#include "step/task_loss.hpp"
#include "util/host_read.hpp"

namespace ddpt {

std::pair<int64_t, int64_t> share_of_rows(int64_t rows, int rank, int world) {
  const int64_t base = rows / world;
  const int64_t extra = rows % world;  // the first `extra` ranks take one more row
  const int64_t first = rank * base + std::min<int64_t>(rank, extra);
  return {first, base + (rank < extra ? 1 : 0)};
}

int64_t forwards_over(const Model& model, int64_t rows, int64_t most_rows, int64_t batch) {
  const int64_t rows_run = model.forwards_in_lockstep() ? most_rows : rows;
  return (rows_run + batch - 1) / batch;
}

EvalResult evaluate(Model& model, const Dataset& data, Communicator& comm, int64_t batch) {
  torch::NoGradGuard no_grad;
  model.train(false);
  const DatasetInfo info = data.info();
  const auto [first, count] = share_of_rows(data.size(), comm.rank(), comm.size());
  // Summed on the device, in double, and read back once: a read per batch would make a GPU wait
  // for each batch before the next is queued.
  torch::Tensor sums =
      torch::zeros({3}, torch::TensorOptions().dtype(torch::kDouble).device(comm.device()));
  const int64_t forwards =
      forwards_over(model, count, share_of_rows(data.size(), 0, comm.size()).second, batch);
  for (int64_t k = 0; k < forwards; ++k) {
    const int64_t start = first + k * batch;
    const int64_t n = std::min(batch, first + count - start);
    if (n <= 0) {  // in lockstep, past this rank's rows: a forward that counts for nothing
      model.forward(data.get(torch::zeros({1}, torch::kLong)).inputs.to(comm.device()));
      continue;
    }
    const Batch b = data.get(torch::arange(start, start + n, torch::kLong));
    const torch::Tensor outputs = model.forward(b.inputs.to(comm.device()));
    sums += task_sums(info, outputs, b.targets.to(comm.device()));
  }
  model.train(true);
  comm.all_reduce(sums, ReduceOp::kSum);
  const torch::Tensor global = read_to_host(sums);
  const double* totals = global.data_ptr<double>();
  EvalResult result;
  const double units = totals[2];
  result.loss = units > 0 ? totals[0] / units : 0.0;
  result.accuracy = units > 0 && info.task != Task::kRegression ? totals[1] / units : 0.0;
  result.samples = data.size();
  return result;
}

std::string describe_eval(const EvalResult& result, Task task) {
  switch (task) {
    case Task::kClassification:
      return fmt::format("loss {:.5f}  accuracy {:.4f}", result.loss, result.accuracy);
    case Task::kNextToken:
      return fmt::format("loss {:.5f}  perplexity {:.3f}  token accuracy {:.4f}", result.loss,
                         std::exp(result.loss), result.accuracy);
    case Task::kRegression:
      return fmt::format("loss (mse) {:.6f}", result.loss);
  }
  return "";
}

}  // namespace ddpt
