// Shell globs on tensor names, as options take them ("0.*,embed.weight": comma separated, spaces
// around each ignored), matched with fnmatch(3); remembers which globs matched, so that a glob
// matching nothing (a typo) can be refused.
#pragma once

#include <string>
#include <vector>

namespace ddpt {

class GlobList {
 public:
  explicit GlobList(const std::string& comma_separated);
  bool empty() const { return globs_.empty(); }
  // Whether `name` matches any glob; those it matches count as used.
  bool matches(const std::string& name);
  // The globs nothing matched so far, in the order given.
  std::vector<std::string> unused() const;

 private:
  std::vector<std::string> globs_;
  std::vector<bool> used_;
};

}  // namespace ddpt
