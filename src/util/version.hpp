// ddptrain's own version: the project version of the top-level CMakeLists.txt, compiled in as
// DDPTRAIN_VERSION (src/CMakeLists.txt). For --version, the banner and the files ddptrain writes.
#pragma once

#include <string>

#ifndef DDPTRAIN_VERSION
#define DDPTRAIN_VERSION "unknown"
#endif

namespace ddpt {

inline std::string ddptrain_version() {
  return DDPTRAIN_VERSION;
}

}  // namespace ddpt
