#include "util/process_identity.hpp"

#include <unistd.h>

#include <array>

namespace ddpt {
namespace {

std::string local_hostname() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
  return name.data();
}

struct Identity {
  int rank = -1;
  std::string host = local_hostname();
};

Identity& identity() {
  static Identity id;
  return id;
}

}  // namespace

void set_process_identity(int world_rank, const std::string& host) {
  identity().rank = world_rank;
  identity().host = host;
}
const std::string& process_host() {
  return identity().host;
}
std::string process_tag() {
  return "[rank " + std::to_string(identity().rank) + " " + identity().host + "]";
}

}  // namespace ddpt
