#include "io/generation_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <system_error>

#include "generate/row_words.hpp"
#include "io/staged_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/process_identity.hpp"

namespace ddpt {
namespace {

constexpr const char* kSettingsFile = "settings.txt";
// A frame: kFrameMagic, the payload's word count, the payload, its checksum. A file whose end
// (or whose zero-filled tail) is not a whole frame is read up to the last whole one.
constexpr int64_t kFrameMagic = 0x4444505447454e31;  // "DDPTGEN1"

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// FNV-1a over the words' bytes.
int64_t checksum(const int64_t* words, size_t count) {
  uint64_t hash = 14695981039346656037ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(words);
  for (size_t i = 0; i < count * sizeof(int64_t); ++i) {
    hash = (hash ^ bytes[i]) * 1099511628211ULL;
  }
  return static_cast<int64_t>(hash);
}

// The rows of a rank's file, frame by frame, up to the first frame that is not whole and sound.
void read_frames(const std::filesystem::path& path, int64_t rows,
                 std::map<int64_t, GeneratedRow>& done) {
  const std::string bytes = read_text(path);
  const size_t words = bytes.size() / sizeof(int64_t);
  std::vector<int64_t> at(words);
  std::memcpy(at.data(), bytes.data(), words * sizeof(int64_t));
  size_t i = 0;
  while (words - i >= 3 && at[i] == kFrameMagic) {
    const int64_t payload = at[i + 1];
    if (payload < 0 || static_cast<uint64_t>(payload) > words - i - 3) return;
    const int64_t* first = at.data() + i + 2;
    std::vector<GeneratedRow> batch;
    if (first[payload] != checksum(first, static_cast<size_t>(payload)) ||
        !read_row_words(first, static_cast<size_t>(payload), rows, batch)) {
      return;
    }
    for (GeneratedRow& row : batch) done[row.row] = std::move(row);
    i += 3 + static_cast<size_t>(payload);
  }
}

// Rank 0: "kept" if `folder` holds rows of these settings, else "fresh" (made afresh).
std::string prepare(const std::filesystem::path& folder, const std::string& settings) {
  std::error_code ignored;
  if (std::filesystem::exists(folder / kSettingsFile, ignored)) {
    if (read_text(folder / kSettingsFile) == settings) return "kept";
    spdlog::warn("generate: {} holds rows of other settings: starting afresh", folder.string());
  }
  std::filesystem::remove_all(folder, ignored);
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  std::ofstream out(folder / kSettingsFile, std::ios::binary);
  out << settings;
  out.close();
  if (error || !out || sync_to_disk(folder / kSettingsFile) != 0) {
    return "cannot write " + (folder / kSettingsFile).string();
  }
  return "fresh";
}

// Rank 0: which earlier rows there are, as the row numbers' bytes, for the other ranks.
std::string row_numbers(const std::map<int64_t, GeneratedRow>& rows) {
  std::string bytes;
  for (const auto& [row, done] : rows) {
    bytes.append(reinterpret_cast<const char*>(&row), sizeof row);
  }
  return bytes;
}

}  // namespace

GenerationProgress::GenerationProgress(const std::filesystem::path& output,
                                       const std::string& settings, int64_t rows, HostGroup& group)
    : folder_(output.string() + ".partial") {
  const std::string state = group.broadcast(
      "generation progress folder", group.rank() == 0 ? prepare(folder_, settings) : std::string());
  if (state != "kept" && state != "fresh") {
    throw DataError("generate: " + state, Raised::kAllRanks);
  }
  // A file of its own for each rank of each attempt: rank 0's host, process and start time name
  // the attempt, so that no attempt appends to an earlier one's file.
  const std::string attempt =
      group.broadcast("generation attempt",
                      fmt::format("{}.{}.{}", process_host(), ::getpid(),
                                  std::chrono::system_clock::now().time_since_epoch().count()));
  mine_ = folder_ / fmt::format("rows.{}.{}.bin", attempt, group.rank());
  // Rank 0 alone reads the earlier rows (the other ranks need only which), before any rank of
  // this attempt writes: every rank deals the same batches.
  if (group.rank() == 0 && state == "kept") {
    for (const auto& entry : std::filesystem::directory_iterator(folder_)) {
      if (entry.path().extension() == ".bin") read_frames(entry.path(), rows, earlier_);
    }
  }
  const std::string numbers = group.broadcast("earlier rows", row_numbers(earlier_));
  for (size_t at = 0; at + sizeof(int64_t) <= numbers.size(); at += sizeof(int64_t)) {
    int64_t row = 0;
    std::memcpy(&row, numbers.data() + at, sizeof row);
    done_rows_.insert(row);
  }
}

void GenerationProgress::record(const std::vector<GeneratedRow>& batch) {
  std::vector<int64_t> words{kFrameMagic, 0};
  append_row_words(batch, words);
  words[1] = static_cast<int64_t>(words.size() - 2);
  words.push_back(checksum(words.data() + 2, words.size() - 2));
  std::ofstream out(mine_, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(words.data()),
            static_cast<std::streamsize>(words.size() * sizeof(int64_t)));
  out.close();
  const int error = !out ? EIO : sync_to_disk(mine_);
  if (error != 0) {
    throw DataError(fmt::format("generate: cannot write finished rows to {}: {}", mine_.string(),
                                std::strerror(error)),
                    Raised::kThisRank);
  }
}

void GenerationProgress::remove() const {
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

}  // namespace ddpt
