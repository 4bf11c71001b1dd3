// Staged outputs: written under ".NAME.tmp" beside the final name, synced, then renamed over it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/staged_file.hpp"

namespace ddpt {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(StagedFile, IsWrittenBesideItsNameSyncedAndRenamedOverTheOldFile) {
  const fs::path dir = fs::temp_directory_path() / ("ddptrain_staged_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path final_path = dir / "step_00000010.h5";
  EXPECT_EQ(staging_path(final_path), dir / ".step_00000010.h5.tmp");
  std::ofstream(final_path) << "old";
  std::ofstream(staging_path(final_path)) << "new";
  EXPECT_EQ(sync_to_disk(staging_path(final_path)), 0);
  publish_staged(final_path);
  EXPECT_EQ(contents(final_path), "new");
  EXPECT_FALSE(fs::exists(staging_path(final_path)));
  EXPECT_EQ(sync_to_disk(dir / "missing.h5"), ENOENT);  // the errno, for the message
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ddpt
