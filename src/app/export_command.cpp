// ddptrain export DECK --checkpoint PATH --output DIR [--weights trained|average]
// [--max-shard-size SIZE]: a checkpoint's model as DIR/model.safetensors (above SIZE, shards and
// model.safetensors.index.json, as Hugging Face saves a model) for the tools that serve models
// (Hugging Face transformers, vLLM, llama.cpp's converters), and for the built-in GPT a config.json
// in Hugging Face's GPT-2 form, so that GPT2LMHeadModel.from_pretrained(DIR) takes it: GPT-2's
// names (the built-in GPT's own), its four Conv1D weights per block stored [in, out] (a Linear's
// transposed), no lm_head when tied. Other models: the names and values of their own parameters and
// buffers.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>

#include "app/commands.hpp"
#include "config/command_flags.hpp"
#include "config/parse_config.hpp"
#include "io/safetensors_writer.hpp"
#include "io/staged_file.hpp"
#include "models/gpt2_layout.hpp"
#include "runtime/job.hpp"
#include "setup/inference_model.hpp"
#include "util/byte_size.hpp"
#include "util/error.hpp"

namespace ddpt {
namespace {

const char* kExportUsage =
    "ddptrain export DECK --checkpoint PATH --output DIR [--weights trained|average] "
    "[--max-shard-size SIZE]";
// Hugging Face's default shard size (save_pretrained's max_shard_size, "5GB"), in binary units.
constexpr int64_t kDefaultMaxShardBytes = int64_t{5} << 30;

std::vector<std::pair<std::string, torch::Tensor>> exported_tensors(Model& model, bool gpt) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const NamedTensor& p : model.named_parameters()) {
    tensors.emplace_back(p.name, gpt && gpt2_conv1d_weight(p.name) ? p.tensor.t() : p.tensor);
  }
  for (const NamedTensor& b : model.named_buffers()) tensors.emplace_back(b.name, b.tensor);
  return tensors;
}

// Hugging Face's GPT2Config for the built-in GPT (exact GELU: "gelu"; LibTorch's layer norms:
// epsilon 1e-5).
std::string gpt2_config_json(const Config& config, const torch::Tensor& wte,
                             const torch::Tensor& wpe) {
  const ModelConfig& m = config.model;
  const int64_t vocab = wte.size(0);
  return fmt::format(
      "{{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
      "  \"vocab_size\": {},\n  \"n_positions\": {},\n  \"n_ctx\": {},\n  \"n_embd\": {},\n"
      "  \"n_layer\": {},\n  \"n_head\": {},\n  \"n_inner\": null,\n"
      "  \"activation_function\": \"gelu\",\n  \"layer_norm_epsilon\": 1e-05,\n"
      "  \"resid_pdrop\": {},\n  \"embd_pdrop\": {},\n  \"attn_pdrop\": {},\n"
      "  \"initializer_range\": 0.02,\n  \"scale_attn_weights\": true,\n"
      "  \"tie_word_embeddings\": {},\n{}  \"torch_dtype\": \"float32\"\n}}\n",
      vocab, wpe.size(0), wpe.size(0), wte.size(1), m.n_layer, m.n_head, m.dropout, m.dropout,
      m.dropout, m.tie ? "true" : "false",
      vocab >= 50257 ? "  \"bos_token_id\": 50256,\n  \"eos_token_id\": 50256,\n" : "");
}

std::filesystem::path output_directory(const std::string& output) {
  const std::filesystem::path dir(output);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw ConfigError("export --output '" + output + "' is a file, not a directory");
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw ConfigError("export --output '" + output + "': cannot make the directory (" +
                      ec.message() + ")");
  }
  return dir;
}

}  // namespace

int export_command(const std::vector<std::string>& args, MpiEnv& mpi) {
  std::vector<std::string> rest = args;
  const std::string checkpoint = take_required_flag(rest, "checkpoint", kExportUsage);
  const std::string output = take_required_flag(rest, "output", kExportUsage);
  const std::string weights = take_flag(rest, "weights");
  const int64_t max_shard_bytes = take_size_flag(rest, "max-shard-size", kDefaultMaxShardBytes);
  if (!weights.empty() && weights != "trained" && weights != "average") {
    throw ConfigError("option '--weights' must be trained or average, not '" + weights + "'");
  }
  Config config = parse_config(rest);
  if (weights == "average" && config.train.ema_decay <= 0) {
    throw ConfigError(
        "export --weights=average: the deck kept no moving average (train.ema_decay = 0)");
  }
  // The moving average where the run kept one, as eval and predict take it, unless asked not to.
  if (weights == "trained") config.train.ema_decay = 0;
  if (mpi.world_rank() != 0) return 0;  // one process writes
  const std::filesystem::path dir = output_directory(output);
  const Job job = set_up_job(config.train.threads);
  InferenceModel loaded = load_inference_model(config, checkpoint, job, /*comm=*/nullptr);
  const bool gpt = config.model.type == ModelType::kGpt;
  const auto tensors = exported_tensors(*loaded.model, gpt);
  const std::string kind = config.train.ema_decay > 0 ? "moving average" : "trained";
  const std::vector<std::string> files =
      write_safetensors_model(dir, tensors,
                              {{"format", "pt"},
                               {"ddptrain_checkpoint", checkpoint},
                               {"ddptrain_step", std::to_string(loaded.step)},
                               {"ddptrain_weights", kind}},
                              max_shard_bytes);
  int64_t bytes = 0;
  for (const auto& [name, t] : tensors) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  if (gpt) {
    std::map<std::string, torch::Tensor> by_name(tensors.begin(), tensors.end());
    const std::string json =
        gpt2_config_json(config, by_name.at("wte.weight"), by_name.at("wpe.weight"));
    write_staged_file(dir / "config.json", [&](std::ostream& out) { out << json; });
  }
  spdlog::info("export: {} tensors ({}) of {} (step {}, {} weights) -> {}{}", tensors.size(),
               human_bytes(bytes), checkpoint, loaded.step, kind,
               files.size() == 1 ? files.front()
                                 : fmt::format("{} shards and {}", files.size() - 1, files.back()),
               gpt ? " and config.json (GPT-2's form)" : "");
  return 0;
}

}  // namespace ddpt
