#include "setup/test_faults.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "config/environment.hpp"
#include "util/error.hpp"
#include "util/process_identity.hpp"
#include "util/stderr_line.hpp"

namespace ddpt {
namespace {

// "R:VALUE": VALUE where R is `rank`, else nothing.
std::optional<double> value_for_rank(const char* name, int rank) {
  const std::string text = environment_text(name);
  if (text.empty()) return std::nullopt;
  const size_t colon = text.find(':');
  char* end = nullptr;
  const long target = std::strtol(text.c_str(), &end, 10);
  const bool rank_read = colon != std::string::npos && colon > 0 && end == text.c_str() + colon;
  const double value = rank_read ? std::strtod(text.c_str() + colon + 1, &end) : -1;
  if (!rank_read || *end != '\0' || target < 0 || value < 0) {
    throw ConfigError(fmt::format("{} = '{}': expected RANK:NUMBER", name, text));
  }
  return target == rank ? std::optional<double>(value) : std::nullopt;
}

void sleep_saying(double seconds, const char* where, const std::string& phase) {
  if (seconds <= 0) return;
  write_stderr_line(fmt::format("{} ddptrain: test hook: sleeping {:.3f} s at the {} of '{}'",
                                process_tag(), seconds, where, phase));
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

class EnvironmentFaults final : public FaultInjector {
 public:
  double slow_forward_s = 0;
  double hold_phase_s = 0;
  double slow_phase_s = 0;
  int64_t leave_out_at_step = 0;  // 0: none
  bool no_host_waits = false;
  bool share_gpu = false;
  std::optional<int64_t> sample_limit;

  void step_starts(int64_t step) override {
    if (step == leave_out_at_step) leave_out_next_ = true;
  }
  void in_forward() override {
    if (slow_forward_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(slow_forward_s));
  }
  void phase_starts(const std::string& phase) override {
    sleep_saying(hold_phase_s, "start", phase);
  }
  void phase_ends(const std::string& phase) override { sleep_saying(slow_phase_s, "end", phase); }
  bool leave_out_all_reduce() override { return std::exchange(leave_out_next_, false); }
  bool host_waits_forbidden() const override { return no_host_waits; }
  bool ranks_may_share_gpu() const override { return share_gpu; }
  std::optional<int64_t> trial_sample_limit() const override { return sample_limit; }

 private:
  bool leave_out_next_ = false;
};

std::optional<int64_t> batch_limit() {
  constexpr const char* kName = "DDPTRAIN_TEST_BATCH_LIMIT";
  const std::string text = environment_text(kName);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || value < 0) {
    throw ConfigError(fmt::format("{} = '{}' is not a whole number of samples", kName, text));
  }
  return value;
}

}  // namespace

std::unique_ptr<FaultInjector> faults_from_environment(int rank) {
  auto faults = std::make_unique<EnvironmentFaults>();
  faults->slow_forward_s = value_for_rank("DDPTRAIN_TEST_SLOW_RANK", rank).value_or(0) / 1e3;
  faults->slow_phase_s = value_for_rank("DDPTRAIN_TEST_SLOW_PHASES", rank).value_or(0) / 1e3;
  faults->hold_phase_s = value_for_rank("DDPTRAIN_TEST_HOLD_PHASES", rank).value_or(0) / 1e3;
  faults->leave_out_at_step =
      static_cast<int64_t>(value_for_rank("DDPTRAIN_TEST_SKIP_ALL_REDUCE", rank).value_or(0));
  faults->no_host_waits = environment_text("DDPTRAIN_TEST_NO_HOST_SYNC") == "1";
  faults->share_gpu = environment_text("DDPTRAIN_TEST_SHARE_GPU") == "1";
  faults->sample_limit = batch_limit();
  return faults;
}

}  // namespace ddpt
