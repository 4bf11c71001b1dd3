#include "config/deck_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "util/error.hpp"

namespace ddpt {

std::optional<size_t> first_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    uint32_t code = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
      code = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      code = lead & 0x0f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      code = lead & 0x07;
    } else {
      return i;  // a continuation byte, 0xc0/0xc1 (overlong) or past 0xf4
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return i;
      code = (code << 6) | (next & 0x3f);
    }
    const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    const bool surrogate = code >= 0xd800 && code <= 0xdfff;
    if (overlong || surrogate || code > 0x10ffff) return i;
    i += length;
  }
  return std::nullopt;
}

std::string escape_bytes(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out;
}

namespace {

// "section.key" for a "key = value" line under "[section]", else "".
std::string option_on_line(const std::string& section, const std::string& line) {
  const size_t equals = line.find('=');
  if (equals == std::string::npos) return "";
  std::string key = line.substr(0, equals);
  key.erase(0, key.find_first_not_of(" \t"));
  key.erase(key.find_last_not_of(" \t") + 1);
  return section.empty() ? key : section + "." + key;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string boost_placeholder_in(std::string_view text) {
  // error_with_option_name's tokens (boost/program_options/errors.hpp, Boost 1.74).
  for (const char* token :
       {"%canonical_option%", "%prefix_option%", "%option%", "%value%", "%original_token%"}) {
    if (text.find(token) != std::string_view::npos) return token;
  }
  return "";
}

void check_arguments_have_no_placeholders(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    const std::string token = boost_placeholder_in(arg);
    if (token.empty()) continue;
    throw ConfigError(fmt::format("command-line argument '{}': '{}' cannot appear in an option",
                                  escape_bytes(arg), token));
  }
}

std::string read_deck_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::istringstream lines(text.str());
  std::string line;
  std::string section;
  for (int number = 1; std::getline(lines, line); ++number) {
    // Comments (from '#') never reach Boost's messages.
    const std::string_view text = std::string_view(line).substr(0, line.find('#'));
    if (const std::string token = boost_placeholder_in(text); !token.empty()) {
      throw ConfigError(
          fmt::format("deck '{}' line {}: '{}' cannot appear in a deck", path, number, token));
    }
    const std::optional<size_t> bad = first_invalid_utf8(line);
    if (!bad) {
      const size_t open = line.find_first_not_of(" \t");
      const size_t close = line.find(']');
      if (open != std::string::npos && line[open] == '[' && close != std::string::npos) {
        section = line.substr(open + 1, close - open - 1);
      }
      continue;
    }
    const std::string option = option_on_line(section, line.substr(0, *bad));
    throw ConfigError(fmt::format(
        "deck '{}' line {}{}: byte 0x{:02x} at column {} is not UTF-8 text ('{}'); save the deck "
        "as UTF-8",
        path, number, option.empty() ? "" : " (option '" + escape_bytes(option) + "')",
        static_cast<unsigned char>(line[*bad]), *bad + 1, escape_bytes(line)));
  }
  return text.str();
}

void check_arguments_are_utf8(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    const std::optional<size_t> bad = first_invalid_utf8(arg);
    if (!bad) continue;
    throw ConfigError(fmt::format("command-line argument '{}': byte 0x{:02x} is not UTF-8 text",
                                  escape_bytes(arg), static_cast<unsigned char>(arg[*bad])));
  }
}

std::vector<std::string> similar_options(const std::string& unknown,
                                         const std::vector<std::string>& names) {
  const size_t start = unknown.find_first_not_of('-');
  if (start == std::string::npos) return {};
  const std::string name = unknown.substr(start, unknown.find('=') - start);  // --a.b=1: a.b
  const size_t dot = name.find('.');
  const std::string key = dot == std::string::npos ? name : name.substr(dot + 1);
  std::vector<std::string> same_key;
  std::vector<std::string> close;
  for (const std::string& known : names) {
    if (known.substr(known.find('.') + 1) == key) same_key.push_back(known);
    if (edit_distance(name, known) <= 2) close.push_back(known);
  }
  return same_key.empty() ? close : same_key;
}

}  // namespace ddpt
