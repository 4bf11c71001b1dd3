#include "util/glob_list.hpp"

#include <fnmatch.h>

#include <sstream>

namespace ddpt {

GlobList::GlobList(const std::string& comma_separated) {
  std::stringstream stream(comma_separated);
  for (std::string glob; std::getline(stream, glob, ',');) {
    glob.erase(0, glob.find_first_not_of(' '));
    glob.erase(glob.find_last_not_of(' ') + 1);
    if (!glob.empty()) globs_.push_back(glob);
  }
  used_.assign(globs_.size(), false);
}

bool GlobList::matches(const std::string& name) {
  bool matched = false;
  for (size_t g = 0; g < globs_.size(); ++g) {
    if (fnmatch(globs_[g].c_str(), name.c_str(), 0) == 0) {
      matched = true;
      used_[g] = true;
    }
  }
  return matched;
}

std::vector<std::string> GlobList::unused() const {
  std::vector<std::string> unused;
  for (size_t g = 0; g < globs_.size(); ++g) {
    if (!used_[g]) unused.push_back(globs_[g]);
  }
  return unused;
}

}  // namespace ddpt
