// MPI has no bfloat16 or float16 types: ddp.compress over MPI sends them as 2-byte elements and
// sums them with a user-defined reduction (each partial sum rounded to the 16-bit type, as NCCL
// does on the wire).
#pragma once

#include <mpi.h>
#include <torch/torch.h>

namespace ddpt {

struct MpiReduction {
  MPI_Datatype type;
  MPI_Op sum;
};

// The datatype and sum operation for bf16 or fp16 tensors, created on first use (collective-free)
// and freed at exit while MPI is still up.
MpiReduction half_sum(torch::ScalarType dtype);

}  // namespace ddpt
