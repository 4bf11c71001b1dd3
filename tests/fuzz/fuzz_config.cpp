// Fuzz target: the deck parser with command-line overrides, as `ddptrain train DECK --k=v ...`
// runs it. Input: text; every line that starts with "--" is one command-line argument after the
// deck, every other line is a line of the deck, in order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/parse_config.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  ddpt::fuzz::quiet_logging();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string deck;
  std::vector<std::string> args{""};  // args[0]: the deck's path, once written
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    if (line.rfind("--", 0) == 0) {
      args.push_back(line);
    } else {
      deck += line + "\n";
    }
    begin = end + 1;
  }
  args[0] = ddpt::fuzz::write_input(reinterpret_cast<const uint8_t*>(deck.data()), deck.size(),
                                    "deck.cfg");
  ddpt::fuzz::run_under_contract([&] { ddpt::parse_config(args); });
  return 0;
}
