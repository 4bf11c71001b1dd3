#include "io/staged_file.hpp"

namespace ddpt {

std::filesystem::path staging_path(const std::filesystem::path& final_path) {
  return final_path.parent_path() / ("." + final_path.filename().string() + ".tmp");
}

void publish_staged(const std::filesystem::path& final_path) {
  std::filesystem::rename(staging_path(final_path), final_path);
}

}  // namespace ddpt
