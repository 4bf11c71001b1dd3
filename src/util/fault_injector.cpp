#include "util/fault_injector.hpp"

namespace ddpt {

FaultInjector& no_faults() {
  static FaultInjector none;
  return none;
}

}  // namespace ddpt
