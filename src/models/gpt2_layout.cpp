#include "models/gpt2_layout.hpp"

namespace ddpt {
namespace {

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

bool gpt2_conv1d_weight(const std::string& name) {
  for (const char* end :
       {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"}) {
    if (ends_with(name, end)) return true;
  }
  return false;
}

std::string gpt_name_of_gpt2(const std::string& gpt2_name) {
  const std::string prefix = "transformer.";
  std::string name = gpt2_name.rfind(prefix, 0) == 0 ? gpt2_name.substr(prefix.size()) : gpt2_name;
  if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) return "";
  return name;
}

}  // namespace ddpt
