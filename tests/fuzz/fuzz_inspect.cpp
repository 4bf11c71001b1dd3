// Fuzz target: `ddptrain inspect FILE` on a metrics, checkpoint or predictions file. Input: the
// file's bytes (seeds: such files written by ddptrain, tests/fuzz/corpus/inspect).
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "fuzz_support.hpp"
#include "io/inspect_file.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ddpt::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ddpt::fuzz::write_input(data, size, "inspect.h5");
  ddpt::fuzz::run_under_contract([&] {
    std::ostringstream out;
    ddpt::inspect_file(path, out);
  });
  return 0;
}
