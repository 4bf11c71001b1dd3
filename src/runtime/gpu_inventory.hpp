// What GPUs this rank can see, in words, for `ddptrain info` and the banner.
#pragma once

#include <string>

namespace ddpt {

// e.g. "2 x NVIDIA H100 80GB HBM3" or "none (LibTorch built without CUDA; CUDA runtime: ...)".
std::string describe_gpus();

}  // namespace ddpt
