#include "train/step_split.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace ddpt {

std::string StepSplit::describe() const {
  if (steps <= 0 || total <= 0) return {};
  const double per_step_ms = 1e3 / static_cast<double>(steps);
  const double in_steps = zero_sync + data + forward + backward + comm_wait + update;
  const std::vector<std::pair<const char*, double>> parts{{"forward", forward},
                                                          {"backward", backward},
                                                          {"comm wait", comm_wait},
                                                          {"optimizer", update},
                                                          {"data", data},
                                                          {"zero+sync", zero_sync},
                                                          {"between steps", total - in_steps}};
  std::string text = fmt::format("{:.2f} ms per step:", total * per_step_ms);
  const char* separator = " ";
  for (const auto& [name, seconds] : parts) {
    text += fmt::format("{}{} {:.2f} ({:.0f}%)", separator, name, seconds * per_step_ms,
                        100 * seconds / total);
    separator = ", ";
  }
  return text;
}

}  // namespace ddpt
