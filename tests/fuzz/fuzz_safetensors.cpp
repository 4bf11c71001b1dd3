// Fuzz target: a safetensors file as `model.init` and `generate --checkpoint` open it (the
// header's length, its JSON, the entries' dtypes, shapes and offsets), then every tensor read.
// Input: the file's bytes.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "io/safetensors_file.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ddpt::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ddpt::fuzz::write_input(data, size, "model.safetensors");
  ddpt::fuzz::run_under_contract([&] {
    const ddpt::SafetensorsFile file(path);
    for (const ddpt::SafetensorsEntry& entry : file.header().entries) file.read(entry);
  });
  return 0;
}
