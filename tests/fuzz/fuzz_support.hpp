// What every fuzz target shares: the contract check and a scratch directory for the input file.
//
// The contract of a target: the call under test returns, or throws a ddpt::Error with exit code 2
// (usage) or 3 (data). Anything else is a defect and aborts, so that libFuzzer keeps the input: a
// ddpt::Error of another code, any other exception escaping (c10::Error, std::filesystem_error,
// std::bad_alloc), and, caught by the sanitizers and libFuzzer themselves, a crash, a sanitizer
// report, a hang or a runaway allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ddpt::fuzz {

// Once per process: a fresh directory under $DDPTRAIN_FUZZ_SCRATCH, else /dev/shm (else /tmp),
// removed at a normal exit.
const std::string& scratch_dir();

// Writes `size` bytes to scratch_dir()/name (replacing it) and returns the path.
std::string write_input(const uint8_t* data, size_t size, const std::string& name);

// Silences ddptrain's and HDF5's own printing: a target runs millions of times.
void quiet_logging();

// Runs `body` under the contract above; aborts (after printing what escaped) on a violation.
void check_contract(void (*body)(void*), void* context);

template <class F>
void run_under_contract(F&& f) {
  check_contract([](void* context) { (*static_cast<F*>(context))(); }, &f);
}

}  // namespace ddpt::fuzz
