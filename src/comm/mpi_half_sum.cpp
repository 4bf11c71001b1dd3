#include "comm/mpi_half_sum.hpp"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "util/check.hpp"

namespace ddpt {
namespace {

template <class T>
void sum_in_float(void* in, void* inout, int* count, MPI_Datatype* /*type*/) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *count; ++i) {
    b[i] = static_cast<T>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
  }
}

// Owns the committed type and the two operations; the handles die with the process otherwise.
class HalfSums {
 public:
  HalfSums() {
    DDPT_CHECK_MPI(MPI_Type_contiguous(2, MPI_BYTE, &type_));
    DDPT_CHECK_MPI(MPI_Type_commit(&type_));
    DDPT_CHECK_MPI(MPI_Op_create(&sum_in_float<c10::BFloat16>, /*commute=*/1, &bf16_));
    DDPT_CHECK_MPI(MPI_Op_create(&sum_in_float<c10::Half>, /*commute=*/1, &fp16_));
  }
  ~HalfSums() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Op_free(&bf16_);
    MPI_Op_free(&fp16_);
    MPI_Type_free(&type_);
  }
  HalfSums(const HalfSums&) = delete;
  HalfSums& operator=(const HalfSums&) = delete;
  MpiReduction get(torch::ScalarType dtype) const {
    return {type_, dtype == torch::kBFloat16 ? bf16_ : fp16_};
  }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op bf16_ = MPI_OP_NULL;
  MPI_Op fp16_ = MPI_OP_NULL;
};

}  // namespace

MpiReduction half_sum(torch::ScalarType dtype) {
  static const HalfSums sums;
  return sums.get(dtype);
}

}  // namespace ddpt
