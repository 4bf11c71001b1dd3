#include "train/log_window.hpp"

namespace ddpt {

torch::Tensor LogWindow::to_row() const {
  return torch::tensor({loss_sum, static_cast<double>(steps), static_cast<double>(skipped),
                        static_cast<double>(skipped_total)},
                       torch::kDouble);
}

LogWindow LogWindow::from_rows(const torch::Tensor& rows, int rank, int world_size) {
  const torch::Tensor table = rows.to(torch::kDouble);  // [saved ranks, 4]
  const torch::Tensor own = table.size(0) == world_size ? table[rank] : table.mean(0);
  LogWindow window;
  window.loss_sum = own[0].item<double>();
  // Counts are the same on every rank (steps are skipped by all ranks alike): row 0's are exact.
  window.steps = table[0][1].item<int64_t>();
  window.skipped = table[0][2].item<int64_t>();
  window.skipped_total = table[0][3].item<int64_t>();
  return window;
}

}  // namespace ddpt
