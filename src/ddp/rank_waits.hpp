// Where a rank waits for the other ranks inside a step's compute: ZeRO-3's unit gathers (in forward
// and backward), the gradient reductions (inside backward where ZeRO-2's pool is full, and after
// it). A slow rank makes every other rank wait there, so a rank's own compute is its forward and
// backward without these waits: what the step split calls comm wait, and what the straggler watch
// leaves out (run/run_meter.hpp, run/straggler_watch.hpp). The engine marks each wait with a
// Scope; whoever measures the step observes them.
#pragma once

namespace ddpt {

class WaitObserver {
 public:
  virtual ~WaitObserver() = default;
  // This rank starts waiting for the others: a collective whose result it needs to go on.
  virtual void wait_begins() noexcept = 0;
  // It has what it waited for: on a CPU the values are in; on a GPU the compute stream is ordered
  // after the collective (there the GPU waits, not the host).
  virtual void wait_ends() noexcept = 0;
};

// The observer told of the engine's waits (none: nobody is told). A wait inside a wait (a
// reduction waited for inside the wait for all of them) is one wait.
class RankWaits {
 public:
  // Not during a wait.
  void observe(WaitObserver* observer) noexcept { observer_ = observer; }

  // RAII: a wait for the other ranks, told to `waits`' observer (nothing where `waits` is null).
  class Scope {
   public:
    explicit Scope(RankWaits* waits) noexcept : waits_(waits) {
      if (waits_ != nullptr && waits_->depth_++ == 0 && waits_->observer_ != nullptr) {
        waits_->observer_->wait_begins();
      }
    }
    ~Scope() {
      if (waits_ != nullptr && --waits_->depth_ == 0 && waits_->observer_ != nullptr) {
        waits_->observer_->wait_ends();
      }
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RankWaits* waits_;
  };

 private:
  WaitObserver* observer_ = nullptr;
  int depth_ = 0;
};

}  // namespace ddpt
