// Hugging Face config.json -> ModelSpec. Field names differ by family (GPT-2's n_embd, NeoX's
// use_parallel_residual, Mixtral's num_local_experts); what a family fixes in code rather than in
// its config (Qwen2's Q/K/V biases, GPT-2's tied embeddings) is stated here, per model_type.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "json_reader.hpp"
#include "model_json.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

namespace shardplan {
namespace {

// Families whose MLP is gated (gate, up and down projections) in transformers' modeling code.
const std::set<std::string> kGatedFamilies = {
    "llama",  "mistral",          "mixtral",     "qwen2",       "qwen2_moe",   "qwen3", "qwen3_moe",
    "gemma",  "gemma2",           "gemma3_text", "olmo",        "olmo2",       "phi3",  "granite",
    "cohere", "starcoder2_gated", "internlm2",   "deepseek_v2", "deepseek_v3", "yi",    "baichuan"};
// Families with a plain two-matrix GeLU MLP, LayerNorm and biases.
const std::set<std::string> kGptFamilies = {"gpt2",  "gpt_neox", "gptj", "gpt_bigcode", "opt",
                                            "bloom", "falcon",   "phi",  "starcoder2"};

int first_int(const nlohmann::json& j, std::initializer_list<const char*> keys, int fallback,
              const std::string& origin, bool required) {
  for (const char* k : keys) {
    if (j.contains(k) && !j.at(k).is_null()) {
      const auto& v = j.at(k);
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 2'000'000'000) {
        throw InputError(origin + ": " + k, "expected a whole number, got " + v.dump());
      }
      return v.get<int>();
    }
  }
  if (required) {
    std::string names;
    for (const char* k : keys) names += (names.empty() ? "" : " or ") + std::string(k);
    throw InputError(origin, "missing " + names);
  }
  return fallback;
}

double first_number(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (j.contains(k) && j.at(k).is_number()) return j.at(k).get<double>();
  }
  return 0;
}

bool flag(const nlohmann::json& j, const char* key, bool fallback) {
  return j.contains(key) && j.at(key).is_boolean() ? j.at(key).get<bool>() : fallback;
}

}  // namespace

ModelSpec model_from_hf_config(const std::string& text, const std::string& origin) {
  const nlohmann::json j = parse_json(text, origin);
  if (!j.is_object()) throw InputError(origin, "expected a JSON object");
  // Multimodal wrappers keep the language model under text_config.
  const nlohmann::json& c =
      j.contains("text_config") && j.at("text_config").is_object() ? j.at("text_config") : j;
  const std::string type = c.value("model_type", j.value("model_type", std::string()));
  const bool gpt_like = kGptFamilies.count(type) != 0;
  const bool gated = kGatedFamilies.count(type) != 0 ||
                     (!gpt_like && c.value("hidden_act", std::string()) == "silu");

  ModelSpec m;
  m.name = c.value("_name_or_path", type.empty() ? origin : type);
  m.source = origin + (type.empty() ? "" : " (Hugging Face " + type + " config)");
  m.layers = first_int(c, {"num_hidden_layers", "n_layer", "num_layers"}, 0, origin, true);
  m.hidden = first_int(c, {"hidden_size", "n_embd", "d_model"}, 0, origin, true);
  m.heads = first_int(c, {"num_attention_heads", "n_head", "num_heads"}, 0, origin, true);
  m.kv_heads = first_int(c, {"num_key_value_heads", "num_kv_heads"}, m.heads, origin, false);
  if (type == "falcon" && flag(c, "multi_query", false) && !c.contains("num_kv_heads"))
    m.kv_heads = 1;
  m.head_dim = first_int(c, {"head_dim"}, m.heads > 0 ? m.hidden / m.heads : 0, origin, false);
  m.ffn_hidden = first_int(c, {"moe_intermediate_size", "intermediate_size", "n_inner", "ffn_dim"},
                           4 * m.hidden, origin, false);
  m.vocab = first_int(c, {"vocab_size", "padded_vocab_size"}, 0, origin, true);
  m.max_positions =
      first_int(c, {"max_position_embeddings", "n_positions", "n_ctx"}, 2048, origin, false);
  // Pre-training context: Llama 3.1-style rope scaling names the original one; very long
  // contexts are capped so the default run is an ordinary pre-training step (--seq-len wins).
  int original = 0;
  if (c.contains("rope_scaling") && c.at("rope_scaling").is_object()) {
    original =
        first_int(c.at("rope_scaling"), {"original_max_position_embeddings"}, 0, origin, false);
  }
  m.seq_len = std::min(original > 0 ? original : m.max_positions, 8192);

  m.mlp = gated ? (type.rfind("gemma", 0) == 0 ? MlpKind::geglu : MlpKind::swiglu) : MlpKind::gelu;
  m.norm = gpt_like ? NormKind::layernorm : NormKind::rmsnorm;
  m.positions = (type == "gpt2" || type == "opt" || type == "gpt_bigcode") ? PositionKind::learned
                : type == "bloom"                                          ? PositionKind::alibi
                                                                           : PositionKind::rotary;
  // transformers' PretrainedConfig ties by default; Llama-family configs default to untied.
  const bool tie_default = gpt_like ? type != "gpt_neox" : type.rfind("gemma", 0) == 0;
  m.tied_embeddings = flag(c, "tie_word_embeddings", tie_default);
  const bool attention_bias = flag(c, "attention_bias", gpt_like);
  m.qkv_bias = flag(c, "qkv_bias", attention_bias || type == "qwen2" || type == "qwen2_moe");
  m.out_bias = attention_bias;
  m.mlp_bias = flag(c, "mlp_bias", gpt_like);
  m.dropout = first_number(c, {"attention_dropout", "attn_pdrop", "resid_pdrop", "hidden_dropout",
                               "embd_pdrop", "dropout"}) > 0;
  m.experts =
      first_int(c, {"num_local_experts", "num_experts", "n_routed_experts"}, 0, origin, false);
  m.experts_per_token =
      m.experts > 0 ? first_int(c, {"num_experts_per_tok", "moe_topk"}, 2, origin, false) : 0;
  if (m.experts > 0 &&
      first_int(c, {"shared_expert_intermediate_size", "n_shared_experts"}, 0, origin, false) > 0) {
    throw InputError(origin,
                     "shared experts (Qwen-MoE / DeepSeek style) are not modelled yet; "
                     "describe the model with --layers/--hidden/... instead");
  }
  if (m.experts == 1) m.experts = 0;
  check_architecture(m, origin);
  return m;
}

}  // namespace shardplan
