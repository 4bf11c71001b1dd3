#include "h5/h5_lock.hpp"

namespace ddpt {

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

}  // namespace ddpt
