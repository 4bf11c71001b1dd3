#pragma once
// The checkout's inputs/ folder, for the unit tests that read the shipped decks and the fuzzers'
// findings (tests/fuzz/findings/ beside it). ctest passes it in the environment variable
// DDPTRAIN_INPUTS_DIR rather than as a compile definition, so that these files compile in the unity
// batch with the others and no absolute path enters their ccache key; a build run without ctest
// (the fuzz build's findings tests) defines it instead.
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ddpt::test {

inline std::string inputs_dir() {
  if (const char* dir = std::getenv("DDPTRAIN_INPUTS_DIR")) return dir;
#ifdef DDPTRAIN_INPUTS_DIR
  return DDPTRAIN_INPUTS_DIR;
#else
  throw std::runtime_error(
      "DDPTRAIN_INPUTS_DIR is not set: run the unit tests through ctest, which sets it to the "
      "checkout's inputs/ folder");
#endif
}

}  // namespace ddpt::test
