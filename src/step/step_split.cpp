#include "step/step_split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "util/log.hpp"

#ifdef DDPTRAIN_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace ddpt {

std::string StepSplit::describe() const {
  if (steps <= 0 || total <= 0) return {};
  const double per_step_ms = 1e3 / static_cast<double>(steps);
  const double in_steps = zero_sync + data + forward + backward + comm_wait + update;
  std::vector<std::pair<const char*, double>> parts{
      {"forward", forward}, {"backward", backward}, {"comm wait", comm_wait}};
  parts.insert(parts.end(), {{"optimizer", update},
                             {"data", data},
                             {"zero+sync", zero_sync},
                             {"between steps", total - in_steps}});
  std::string text = fmt::format("{:.2f} ms per step:", total * per_step_ms);
  const char* separator = " ";
  for (const auto& [name, seconds] : parts) {
    text += fmt::format("{}{} {:.2f} ({:.0f}%)", separator, name, seconds * per_step_ms,
                        100 * seconds / total);
    separator = ", ";
  }
  return text;
}

#ifdef DDPTRAIN_TORCH_CUDA
struct GpuLapTimer::Events {
  struct Mark {
    at::cuda::CUDAEvent event;
    double StepSplit::*ends;  // the phase this mark ends (nullptr: none)
    bool before_wait;         // ends part of a phase that a later mark names (lap_before_wait)
  };
  c10::DeviceIndex device;
  std::vector<Mark> marks;                 // recorded, in order
  std::vector<at::cuda::CUDAEvent> spare;  // passed and read: recorded again by later laps

  // The marks before the waits of the phase that `phase` ends now: that phase's.
  void name_parts_before_waits(double StepSplit::*phase) {
    for (auto m = marks.rbegin();
         m != marks.rend() && (m->before_wait || m->ends == &StepSplit::comm_wait); ++m) {
      if (!m->before_wait) continue;
      m->ends = phase;
      m->before_wait = false;
    }
  }
  // Keeps the last `keep` marks, and takes the others' events back for reuse.
  void retire_all_but(size_t keep) {
    const auto retired = static_cast<std::ptrdiff_t>(marks.size() - std::min(keep, marks.size()));
    for (auto m = marks.begin(); m != marks.begin() + retired; ++m) {
      spare.push_back(std::move(m->event));
    }
    marks.erase(marks.begin(), marks.begin() + retired);
  }
};

GpuLapTimer::GpuLapTimer(const c10::Device& device) {
  if (device.is_cuda()) impl_ = std::make_unique<Events>(Events{device.index(), {}, {}});
}

void GpuLapTimer::lap(double StepSplit::*phase) noexcept {
  record(phase, /*before_wait=*/false);
}

void GpuLapTimer::lap_before_wait() noexcept {
  record(nullptr, /*before_wait=*/true);
}

void GpuLapTimer::record(double StepSplit::*phase, bool before_wait) noexcept {
  if (!impl_) return;
  try {
    at::cuda::CUDAEvent event(cudaEventDefault);  // with timing, unlike the default flags
    if (!impl_->spare.empty()) {
      event = std::move(impl_->spare.back());
      impl_->spare.pop_back();
    }
    event.record(c10::cuda::getCurrentCUDAStream(impl_->device));
    if (!before_wait && phase != &StepSplit::comm_wait) impl_->name_parts_before_waits(phase);
    impl_->marks.push_back({std::move(event), phase, before_wait});
  } catch (const std::exception& error) {
    switch_off("recording a CUDA event", error.what());
  }
}

void GpuLapTimer::collect(StepSplit& split) noexcept {
  if (!impl_ || impl_->marks.size() < 2) return;
  try {
    impl_->marks.back().event.synchronize();
    for (size_t i = 1; i < impl_->marks.size(); ++i) {
      const Events::Mark& mark = impl_->marks[i];
      const double seconds = impl_->marks[i - 1].event.elapsed_time(mark.event) / 1e3;
      if (mark.ends != nullptr) split.*mark.ends += seconds;
      split.total += seconds;
    }
    split.on_gpu = true;
    impl_->retire_all_but(1);
  } catch (const std::exception& error) {
    switch_off("reading CUDA events", error.what());
  }
}

void GpuLapTimer::discard() noexcept {
  if (impl_) impl_->retire_all_but(0);
}
#else
struct GpuLapTimer::Events {};
GpuLapTimer::GpuLapTimer(const c10::Device& /*device*/) {}
void GpuLapTimer::lap(double StepSplit::* /*phase*/) noexcept {}
void GpuLapTimer::lap_before_wait() noexcept {}
void GpuLapTimer::record(double StepSplit::* /*phase*/, bool /*before_wait*/) noexcept {}
void GpuLapTimer::collect(StepSplit& /*split*/) noexcept {}
void GpuLapTimer::discard() noexcept {}
#endif

GpuLapTimer::~GpuLapTimer() = default;

void GpuLapTimer::switch_off(const char* what, const char* why) noexcept {
  impl_.reset();
  try {
    spdlog::warn("the GPU's step split is off ({} failed: {}); training goes on", what, why);
  } catch (...) {  // a warning that cannot be written changes nothing
  }
}

}  // namespace ddpt
