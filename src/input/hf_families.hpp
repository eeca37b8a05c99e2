// The Hugging Face families shardplan reads, one row each (model_type): what each family's
// modeling code fixes when the config is silent. The families of 2025 whose conventions go
// further (gpt-oss, Nemotron, GLM-4.5, Kimi K2 and the hybrids Qwen3-Next, Nemotron-H,
// MiniMax-01) name a function of their own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/specs.hpp"

namespace shardplan {

/// Which MoE keys a family's config spells its experts with (beside num_local_experts /
/// num_experts / n_routed_experts and num_experts_per_tok, which every family reads).
enum class HfMoeKeys {
  plain,     // Mixtral-style: every layer MoE, one expert width
  deepseek,  // n_shared_experts, moe_intermediate_size, first_k_dense_replace, MTP layers
  qwen,      // moe_intermediate_size, shared_expert_intermediate_size, decoder_sparse_step
  llama4,    // a shared expert of intermediate_size, intermediate_size_mlp, interleaving
};

/// Which layers attend in a sliding window when the config gives one.
enum class HfWindow {
  none,
  every_layer,  // Mistral, Mixtral: config.sliding_window on every layer (null: no window)
  gemma2,       // every other layer
  gemma3,       // sliding_window_pattern - 1 local layers to one global (default 6)
};

/// One row per Hugging Face model_type shardplan reads: what its modeling_*.py fixes when the
/// config is silent, so that a family is one row, not type checks spread over the reader.
struct HfFamily {
  const char* type;
  /// A multimodal wrapper whose text_config omits model_type: the family it is read as.
  const char* read_as = nullptr;
  /// GPT-2-like: LayerNorm, biases on every linear by default, tied embeddings (but GPT-NeoX).
  bool gpt_like = false;
  MlpKind mlp = MlpKind::gelu;
  PositionKind positions = PositionKind::rotary;
  bool tied = false;         // tie_word_embeddings when the config leaves it out
  bool qkv_bias = false;     // Q/K/V biases when the config leaves them out (Qwen2)
  bool qk_norm = false;      // q_norm and k_norm over head_dim (Qwen3, Gemma 3)
  bool four_h = false;       // the MLP width is 4 x hidden when the config leaves it out
  bool multi_query = false;  // reads Falcon's multi_query (one K/V head)
  HfMoeKeys moe = HfMoeKeys::plain;
  HfWindow window = HfWindow::none;
  int vocab = 0;                  // vocab_size when the config leaves it out (0: required)
  const char* vocab_source = "";  // where that default comes from
  int positions_default = 2048;   // max_position_embeddings when the config leaves it out
  /// What a newer family's modeling code fixes beyond the rest (MLP kind, norms, biases, sinks,
  /// layer pattern), applied after the shared readers; null for none.
  void (*conventions)(const nlohmann::json& c, const std::string& origin, ModelSpec& m) = nullptr;
};

/// The family row of a model_type; null when shardplan does not read it.
const HfFamily* find_hf_family(const std::string& type);
/// Every model_type read, sorted and comma-separated, for messages.
std::string supported_hf_types();

}  // namespace shardplan
