#include "util/host_read.hpp"

#include <atomic>

namespace ddpt {
namespace {

std::atomic<int64_t> reads{0};

}  // namespace

double read_double(const torch::Tensor& value) {
  ++reads;
  return value.item<double>();
}

int64_t read_int(const torch::Tensor& value) {
  ++reads;
  return value.item<int64_t>();
}

bool read_bool(const torch::Tensor& value) {
  ++reads;
  return value.item<bool>();
}

torch::Tensor read_to_host(const torch::Tensor& values) {
  ++reads;
  return values.cpu();
}

int64_t host_reads_so_far() {
  return reads.load();
}

}  // namespace ddpt
