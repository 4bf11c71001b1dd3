#include "config/option_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>

#include "util/error.hpp"

namespace ddpt {

void OptionTable::validate() const {
  for (const auto& entry : entries_) {
    if (!entry.check) continue;
    const std::string problem = entry.check();
    if (!problem.empty()) {
      throw ConfigError("option '" + entry.name + "' = " + entry.value_text() + ": " + problem);
    }
  }
  for (const auto& entry : entries_) {
    if (entry.apply) entry.apply();
  }
}

namespace {

// `text` as a whole number (optional sign, digits, nothing else), or nullopt.
std::optional<int64_t> whole_number(const std::string& text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  return value;
}

}  // namespace

OptionTable& OptionTable::add_count_or_word(const std::string& name, int64_t* field,
                                            bool* chosen_word, const std::string& word,
                                            const std::string& help, int64_t minimum) {
  auto text = std::make_shared<std::string>(*chosen_word ? word : std::to_string(*field));
  const std::function<std::string(const std::string&)> check = [word,
                                                                minimum](const std::string& value) {
    const std::optional<int64_t> number = whole_number(value);
    if (value == word || (number && *number >= minimum)) return std::string();
    return "must be a whole number of at least " + std::to_string(minimum) + ", or " + word;
  };
  add(name, text.get(), help, check);
  entries_.back().apply = [field, chosen_word, word, text] {
    *chosen_word = *text == word;
    *field = *chosen_word ? 0 : *whole_number(*text);
  };
  return *this;
}

std::vector<std::string> OptionTable::names() const {
  std::vector<std::string> names;
  for (const auto& entry : entries_) names.push_back(entry.name);
  return names;
}

std::string OptionTable::to_ini() const {
  // Keep the table's order of sections and keys so the file reads like --help.
  std::vector<std::string> section_order;
  std::map<std::string, std::string> section_text;
  for (const auto& entry : entries_) {
    const auto dot = entry.name.find('.');
    const std::string section = entry.name.substr(0, dot);
    const std::string key = entry.name.substr(dot + 1);
    if (section_text.count(section) == 0) section_order.push_back(section);
    section_text[section] += key + " = " + entry.value_text() + "\n";
  }
  std::string text;
  for (const auto& section : section_order) {
    if (!text.empty()) text += "\n";
    text += "[" + section + "]\n" + section_text[section];
  }
  return text;
}

std::function<std::string(const int64_t&)> at_least(int64_t minimum) {
  return [minimum](const int64_t& value) {
    return value >= minimum ? std::string() : "must be at least " + std::to_string(minimum);
  };
}

std::function<std::string(const int64_t&)> between(int64_t minimum, int64_t maximum) {
  return [minimum, maximum](const int64_t& value) {
    return value >= minimum && value <= maximum
               ? std::string()
               : "must be from " + std::to_string(minimum) + " to " + std::to_string(maximum);
  };
}

// NaN fails every comparison, but inf passes "> 0": an infinite learning rate trained on and
// ended in non-finite losses (exit 4) before these said "finite".
std::function<std::string(const double&)> positive() {
  return [](const double& value) {
    return std::isfinite(value) && value > 0 ? std::string() : "must be a finite positive number";
  };
}

std::function<std::string(const double&)> non_negative() {
  return [](const double& value) {
    return std::isfinite(value) && value >= 0 ? std::string()
                                              : "must be a finite number, not negative";
  };
}

std::function<std::string(const double&)> off_or_above(double minimum) {
  return [minimum](const double& value) {
    return value == 0 || (std::isfinite(value) && value > minimum)
               ? std::string()
               : fmt::format("must be 0 (off) or a finite number above {}", minimum);
  };
}

std::function<std::string(const double&)> in_unit_interval() {
  return [](const double& value) {
    return value >= 0 && value < 1 ? std::string() : "must be in [0, 1)";
  };
}

std::function<std::string(const double&)> a_fraction_above_zero() {
  return [](const double& value) {
    return value > 0 && value <= 1 ? std::string() : "must be in (0, 1]";
  };
}

std::function<std::string(const std::string&)> one_of(std::vector<std::string> choices) {
  return [choices](const std::string& value) {
    if (std::find(choices.begin(), choices.end(), value) != choices.end()) return std::string();
    std::string list;
    for (const auto& choice : choices) list += (list.empty() ? "" : ", ") + choice;
    return "must be one of: " + list;
  };
}

}  // namespace ddpt
