// Checks on the raw text of a deck and of command-line arguments, before Boost parses them:
// bytes that are not UTF-8 (a binary file, a Latin-1 editor, a half-copied file) are refused with
// the line and the option they are on, instead of ending up in a path or a message.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpt {

// The offset of the first byte of `text` that does not belong to a well-formed UTF-8 sequence
// (overlong forms, surrogates and code points past U+10FFFF included), or nullopt.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// `text` with every byte that is not printable ASCII written as \xNN: safe to print.
std::string escape_bytes(std::string_view text);

// The deck's text; throws ConfigError (exit 2) naming the deck, the line and the option on it
// when a line is not UTF-8 or holds a Boost placeholder (below).
std::string read_deck_text(const std::string& path);

// Throws ConfigError naming the argument when a command-line argument is not UTF-8.
void check_arguments_are_utf8(const std::vector<std::string>& args);

// The first of Boost.Program_options' message placeholders ("%option%", "%value%", ...) in
// `text`, or "". Boost's error messages replace each placeholder with the option or value, again
// and again until none is left, so an option named "train.%canonical_option%" made the message
// of its own error grow forever (found by tests/fuzz): such text is refused before Boost sees it.
std::string boost_placeholder_in(std::string_view text);

// Throws ConfigError naming the argument when a command-line argument holds a Boost placeholder.
void check_arguments_have_no_placeholders(const std::vector<std::string>& args);

// The option names closest to `unknown` (a section.key, or --section.key): the same key in
// another section, else the names within 2 edits. Empty when nothing is close.
std::vector<std::string> similar_options(const std::string& unknown,
                                         const std::vector<std::string>& names);

}  // namespace ddpt
