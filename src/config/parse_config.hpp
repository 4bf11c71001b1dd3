// Command line + INI deck -> Config. Every rank parses the same arguments the same way, so a
// ConfigError is raised identically everywhere (rank 0 reports it; all exit with code 2).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace ddpt {

// `args`: what follows the subcommand: [DECK] [--section.key=value ...].
// A deck is required unless `deck_optional`. Throws ConfigError on any problem.
Config parse_config(const std::vector<std::string>& args, bool deck_optional = false);

// The option table as `--help` prints it.
std::string options_help();

}  // namespace ddpt
