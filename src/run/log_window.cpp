#include "run/log_window.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/host_read.hpp"

namespace ddpt {

void LogWindow::add_loss(const torch::Tensor& step_loss) {
  // Out of place: a copied window (a checkpoint's) never shares the running sum.
  const torch::Tensor loss = step_loss.detach().to(torch::kDouble);
  loss_sum = loss_sum.defined() ? loss_sum.to(loss.device()) + loss : loss.clone();
}

double LogWindow::loss_sum_value() const {
  return loss_sum.defined() ? read_double(loss_sum) : 0.0;
}

torch::Tensor LogWindow::to_row() const {
  return torch::tensor({loss_sum_value(), static_cast<double>(steps), static_cast<double>(skipped),
                        static_cast<double>(skipped_total)},
                       torch::kDouble);
}

LogWindow LogWindow::from_rows(const torch::Tensor& rows, int rank, int world_size) {
  // A damaged checkpoint can hold any shape and any numbers here (found by tests/fuzz): refuse
  // what a saved window cannot be (exit 3), instead of LibTorch's indexing or conversion errors.
  if (rows.dim() != 2 || rows.size(0) < 1 || rows.size(1) != 4) {
    throw DataError(fmt::format("dataset 'loop/log_window' has shape [{}], not [ranks, 4]",
                                fmt::join(rows.sizes(), ", ")),
                    Raised::kAllRanks);
  }
  const torch::Tensor table = rows.to(torch::kDouble);  // [saved ranks, 4]
  const torch::Tensor own = table.size(0) == world_size ? table[rank] : table.mean(0);
  // Counts are the same on every rank (steps are skipped by all ranks alike): row 0's are exact.
  auto count = [&table](int column) {
    const double value = read_double(table[0][column]);
    if (!(value >= 0 && value < 9007199254740992.0)) {  // 2^53: every such count is exact
      throw DataError(fmt::format("dataset 'loop/log_window' holds the count {}", value),
                      Raised::kAllRanks);
    }
    return static_cast<int64_t>(value);
  };
  LogWindow window;
  window.loss_sum = own[0].clone();
  window.steps = count(1);
  window.skipped = count(2);
  window.skipped_total = count(3);
  return window;
}

}  // namespace ddpt
