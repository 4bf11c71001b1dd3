// One table of options drives the parser, `--help`, validation and the resolved deck.
// Each entry binds a Config field, its default, a help line and an optional constraint.
#pragma once

#include <boost/program_options.hpp>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "config/choices.hpp"

namespace ddpt {

// Constraints for OptionTable::add.
std::function<std::string(const int64_t&)> at_least(int64_t minimum);
std::function<std::string(const int64_t&)> between(int64_t minimum, int64_t maximum);
std::function<std::string(const double&)> positive();
std::function<std::string(const double&)> non_negative();
std::function<std::string(const double&)> off_or_above(double minimum);  // 0, or > minimum
std::function<std::string(const double&)> in_unit_interval();            // [0, 1)
std::function<std::string(const double&)> a_fraction_above_zero();       // (0, 1]
std::function<std::string(const std::string&)> one_of(std::vector<std::string> choices);

class OptionTable {
 public:
  explicit OptionTable(const std::string& caption) : description_(caption, 100) {}

  // An option bound to `field`, defaulting to the value the field already holds.
  template <class T>
  OptionTable& add(const std::string& name, T* field, const std::string& help,
                   std::function<std::string(const T&)> check = {}) {
    description_.add_options()(
        name.c_str(),
        boost::program_options::value<T>(field)->default_value(*field, to_text(*field)),
        help.c_str());
    Entry entry;
    entry.name = name;
    entry.value_text = [field] { return to_text(*field); };
    if (check) entry.check = [field, check] { return check(*field); };
    entries_.push_back(std::move(entry));
    return *this;
  }

  // An option whose value is one of the words of choices<E>(), bound to an enum field: the word
  // is parsed and checked as text, and validate() stores the enum.
  template <class E>
  OptionTable& add_choice(const std::string& name, E* field, const std::string& help) {
    auto word = std::make_shared<std::string>(choice_name(*field));
    std::vector<std::string> words;
    for (const auto& choice : choices<E>()) words.emplace_back(choice.first);
    add(name, word.get(), help, one_of(words));
    entries_.back().apply = [field, word] {
      for (const auto& [text, value] : choices<E>()) {
        if (*word == text) *field = value;
      }
    };
    return *this;
  }

  // A whole number of at least `minimum`, or the one word `word` (then *chosen_word is set and
  // *field is 0), bound as text: the resolved deck and --help show what was written.
  OptionTable& add_count_or_word(const std::string& name, int64_t* field, bool* chosen_word,
                                 const std::string& word, const std::string& help, int64_t minimum);

  const boost::program_options::options_description& description() const { return description_; }
  // Throws ConfigError naming the first option whose value breaks its constraint; then stores
  // the enums of add_choice() options in their fields.
  void validate() const;
  // Every option as INI text, grouped by section: the resolved deck.
  std::string to_ini() const;
  // Every option's name (section.key), in the table's order.
  std::vector<std::string> names() const;

 private:
  struct Entry {
    std::string name;
    std::function<std::string()> value_text;
    std::function<std::string()> check;  // returns what is wrong, empty if fine
    std::function<void()> apply;  // add_choice, add_count_or_word: the text -> the fields (keeps
                                  // the text alive)
  };
  template <class T>
  static std::string to_text(const T& value) {
    std::ostringstream out;
    out.precision(std::numeric_limits<double>::max_digits10 - 2);
    out << std::boolalpha << value;
    return out.str();
  }

  boost::program_options::options_description description_;
  std::vector<Entry> entries_;
};

}  // namespace ddpt
