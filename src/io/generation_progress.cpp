#include "io/generation_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <system_error>

#include "io/staged_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/process_identity.hpp"

namespace ddpt {
namespace {

constexpr const char* kSettingsFile = "settings.txt";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A rank's records: row, finish, token count n, then n token ids and n log-probabilities (the
// doubles' bits), all 8-byte words. A record the file ends inside of is dropped.
void read_records(const std::filesystem::path& path, std::map<int64_t, GeneratedRow>& done) {
  const std::string bytes = read_text(path);
  const size_t words = bytes.size() / sizeof(int64_t);
  std::vector<int64_t> at(words);
  std::memcpy(at.data(), bytes.data(), words * sizeof(int64_t));
  size_t i = 0;
  while (i + 3 <= words) {
    const auto n = static_cast<size_t>(at[i + 2]);
    if (at[i + 2] < 0 || i + 3 + 2 * n > words) break;  // cut short
    GeneratedRow row;
    row.row = at[i];
    row.finish = static_cast<Finish>(at[i + 1]);
    row.tokens.assign(at.begin() + static_cast<int64_t>(i + 3),
                      at.begin() + static_cast<int64_t>(i + 3 + n));
    row.logprobs.resize(n);
    std::memcpy(row.logprobs.data(), at.data() + i + 3 + n, n * sizeof(double));
    done[row.row] = std::move(row);
    i += 3 + 2 * n;
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

}  // namespace

GenerationProgress::GenerationProgress(const std::filesystem::path& output,
                                       const std::string& settings, HostGroup& group)
    : folder_(output.string() + ".partial") {
  const std::string state = group.broadcast(
      "generation progress folder", group.rank() == 0 ? prepare(folder_, settings) : std::string());
  if (state != "kept" && state != "fresh") {
    throw DataError("generate: " + state, Raised::kAllRanks);
  }
  // Each process a file of its own: attempts on other rank counts never share one.
  mine_ = folder_ / fmt::format("rows.{}.{}.bin", process_host(), ::getpid());
  if (state == "kept") {
    for (const auto& entry : std::filesystem::directory_iterator(folder_)) {
      if (entry.path().extension() == ".bin") read_records(entry.path(), done_);
    }
  }
  // No rank records this attempt's rows before every rank has read the earlier ones: a rank
  // still reading would take them for an earlier attempt's, and deal the batches otherwise.
  group.barrier("earlier rows read");
}

void GenerationProgress::record(const std::vector<GeneratedRow>& batch) {
  std::vector<int64_t> words;
  for (const GeneratedRow& row : batch) {
    words.insert(words.end(), {row.row, static_cast<int64_t>(row.finish),
                               static_cast<int64_t>(row.tokens.size())});
    words.insert(words.end(), row.tokens.begin(), row.tokens.end());
    for (const double logprob : row.logprobs) {
      int64_t bits = 0;
      std::memcpy(&bits, &logprob, sizeof bits);
      words.push_back(bits);
    }
  }
  std::ofstream out(mine_, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(words.data()),
            static_cast<std::streamsize>(words.size() * sizeof(int64_t)));
  out.close();
  if (!out || sync_to_disk(mine_) != 0) {
    throw DataError(fmt::format("generate: cannot write finished rows to {}: {}", mine_.string(),
                                std::strerror(errno)),
                    Raised::kThisRank);
  }
}

void GenerationProgress::remove() const {
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

}  // namespace ddpt
