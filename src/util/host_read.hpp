// Reads of tensor values back to the host, counted. On a GPU each read waits for every kernel
// queued before it, and the GPU idles until the host has queued the next ones: the training step
// reads nothing back (train.step_checks = device), and its loss, gradient norm and skipped-step
// count are read at the metrics rows and checkpoints only. Every read the training code makes
// goes through here (tests/lint/source_rules.py: no .item() or .cpu() elsewhere in ddp/,
// state/, optim/, step/ or run/), so a test can count the reads a run of steps made
// (tests/mpi/test_guards.cpp).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace ddpt {

// The value of a one-element tensor on any device.
double read_double(const torch::Tensor& value);
int64_t read_int(const torch::Tensor& value);
bool read_bool(const torch::Tensor& value);
// A copy of `values` in host memory (one read, whatever its size).
torch::Tensor read_to_host(const torch::Tensor& values);

// Reads made by this process so far (of any tensor, on any device).
int64_t host_reads_so_far();

}  // namespace ddpt
