// HDF5's Fletcher32 checksum, computed faster, for HDF5's own Fletcher32 filter.
//
// Every dataset ddptrain writes carries HDF5's Fletcher32 filter (DESIGN.md), and every read
// verifies it. HDF5 computes the sum one 16-bit word at a time: in writing a checkpoint that took
// a sizeable part of the time dd takes to write and sync the same bytes, and as much again in
// loading it. fletcher32() computes the same value, exactly, with vector instructions, several
// times faster (benchmarks.md, "Choices measured": Fletcher32 vectorised).
//
// How HDF5's filter gets it: the filter calls the library function H5_checksum_fletcher32, which
// libhdf5 exports and calls through the dynamic linker, so this file's definition of that function
// takes its place for every caller in the process (ELF symbol interposition, as malloc replacements
// work). The filter, the bytes it stores, its error message and the files stay HDF5's own, and h5py
// and h5dump verify them as before. Where the library binds the call to its own copy, or for an
// HDF5 version this was not checked against (1.8 to 1.14 keep the function's signature), HDF5 sums
// as before: slower, never different. tests/unit/test_h5_fletcher32.cpp checks the values, and
// test_h5.cpp (H5.Fletcher32*) that HDF5's filter uses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ddpt {

// HDF5's Fletcher32 of the `bytes` bytes at `data`: the value HDF5's filter stores after a chunk.
uint32_t fletcher32(const void* data, size_t bytes);

// The HDF5 library's version and who computes its filter's sums in this process, for `ddptrain
// info`: "1.10.8, Fletcher32 sums by ddptrain (AVX-512)" (or AVX2, or baseline x86-64) where HDF5
// calls fletcher32(), "... by HDF5" where it does not (found out once, by writing one checksummed
// chunk into a file in memory).
std::string hdf5_checksum_text();

// How many sums HDF5 has had this file compute in this process: 0 after a filtered write means
// HDF5 sums with its own copy (for tests).
uint64_t hdf5_fletcher32_calls();

}  // namespace ddpt
