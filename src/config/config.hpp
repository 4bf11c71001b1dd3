// The resolved configuration of one run: every section of the deck (config/sections.hpp), with
// its defaults. Filled only by parse_config(); setup/ hands each component its sections or its
// options, so no layer below setup/ sees the whole deck.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/int_list.hpp"
#include "config/sections.hpp"

namespace ddpt {

struct Config {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  OptimConfig optim;
  DdpConfig ddp;
  DistConfig dist;
  LogConfig log;
  CheckpointConfig checkpoint;
  EvalConfig eval;
  GenerateConfig generate;
  std::string deck_path;      // the deck this came from (empty: defaults and overrides only)
  std::string resolved_text;  // the resolved deck in INI form, every option spelled out
};

}  // namespace ddpt
