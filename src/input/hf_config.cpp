// Hugging Face config.json -> ModelSpec. Field names differ by family (GPT-2's n_embd, NeoX's
// use_parallel_residual, Mixtral's num_local_experts, DeepSeek's n_routed_experts); what a family
// fixes in code rather than in its config (Qwen2's Q/K/V biases, Gemma 2's four norms per layer,
// GPT-2's tied embeddings) is stated here, per model_type, as transformers' modeling_*.py has it.
// A model_type not listed is refused by name: guessing an architecture would mislead.
#include <fmt/format.h>

#include <algorithm>

#include "hf_families.hpp"
#include "hf_fields.hpp"
#include "json_reader.hpp"
#include "model_json.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

namespace shardplan {
namespace {

// A string field of the config, or `fallback` when it is absent or not a string (fuzzing found
// "_name_or_path": [...] aborting the program through nlohmann's type_error).
std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool present(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (j.contains(k) && !j.at(k).is_null()) return true;
  }
  return false;
}

double first_number(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (j.contains(k) && j.at(k).is_number()) return j.at(k).get<double>();
  }
  return 0;
}

// Mixture-of-experts fields of Mixtral, Qwen-MoE, DeepSeek and Llama 4.
void read_moe(const nlohmann::json& c, const HfFamily& family, const std::string& origin,
              ModelSpec& m) {
  m.experts =
      first_int(c, {"num_local_experts", "num_experts", "n_routed_experts"}, 0, origin, false);
  if (m.experts <= 1) {
    m.experts = 0;
    return;
  }
  m.experts_per_token = first_int(c, {"num_experts_per_tok"}, 0, origin, true);
  const bool deepseek = family.moe == HfMoeKeys::deepseek;
  const bool qwen = family.moe == HfMoeKeys::qwen;
  const bool llama4 = family.moe == HfMoeKeys::llama4;
  if (deepseek || qwen) {
    // moe_intermediate_size is one expert's width; intermediate_size the dense layers'.
    m.dense_ffn_hidden = m.ffn_hidden;
    m.ffn_hidden = first_int(c, {"moe_intermediate_size"}, 0, origin, true);
  }
  if (deepseek) {
    m.first_dense_layers = first_int(c, {"first_k_dense_replace"}, 0, origin, false);
    if (first_int(c, {"moe_layer_freq"}, 1, origin, false) != 1) {
      throw InputError(origin + ": moe_layer_freq",
                       "only 1 (every layer after "
                       "first_k_dense_replace is MoE) is modelled");
    }
    m.shared_ffn_hidden = first_int(c, {"n_shared_experts"}, 0, origin, false) * m.ffn_hidden;
    // DeepSeek-V3's auxiliary-loss-free balancing adds a per-expert bias (noaux_tc).
    m.router_bias = string_or(c, "topk_method", "") == "noaux_tc";
    m.mtp_layers = first_int(c, {"num_nextn_predict_layers"}, 0, origin, false);
  }
  if (qwen) {
    m.moe_layer_step = std::max(1, first_int(c, {"decoder_sparse_step"}, 1, origin, false));
    m.shared_ffn_hidden = first_int(c, {"shared_expert_intermediate_size"}, 0, origin, false);
    m.shared_expert_gate = m.shared_ffn_hidden > 0;
    if (c.contains("mlp_only_layers") && c.at("mlp_only_layers").is_array()) {
      // Only a leading run of dense layers fits the layout model (first_dense_layers).
      const auto& dense = c.at("mlp_only_layers");
      for (size_t i = 0; i < dense.size(); ++i) {
        if (!dense[i].is_number_integer() || dense[i].get<long long>() != static_cast<long long>(i))
          throw InputError(origin + ": mlp_only_layers",
                           "only a leading run [0, 1, ..., k-1] of dense layers is modelled");
      }
      m.first_dense_layers = static_cast<int>(dense.size());
      if (m.first_dense_layers > 0 && m.moe_layer_step != 1)
        throw InputError(origin + ": mlp_only_layers",
                         "mlp_only_layers together with decoder_sparse_step > 1 is not modelled");
    }
  }
  if (llama4) {
    // Llama 4: routed experts and one shared expert of intermediate_size; the dense layers
    // between MoE layers use intermediate_size_mlp.
    m.shared_ffn_hidden = m.ffn_hidden;
    m.dense_ffn_hidden = first_int(c, {"intermediate_size_mlp"}, m.ffn_hidden, origin, false);
    m.moe_layer_step = std::max(1, first_int(c, {"interleave_moe_layer_step"}, 1, origin, false));
  }
}

// DeepSeek-V2/V3 multi-head latent attention.
void read_mla(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.mla.kv_lora_rank = first_int(c, {"kv_lora_rank"}, 0, origin, false);
  if (m.mla.kv_lora_rank == 0) return;
  m.mla.q_lora_rank = first_int(c, {"q_lora_rank"}, 0, origin, false);
  m.mla.qk_rope_head_dim = first_int(c, {"qk_rope_head_dim"}, 0, origin, true);
  m.mla.qk_nope_head_dim = first_int(c, {"qk_nope_head_dim"}, 0, origin, true);
  m.mla.v_head_dim = first_int(c, {"v_head_dim"}, 0, origin, true);
  m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
  m.kv_heads = m.heads;
}

// Sliding-window attention of Gemma 2 (every other layer) and Gemma 3 (five local to one
// global); Mistral and Mixtral window every layer when sliding_window is set
// (transformers modeling_mistral.py passes config.sliding_window to every layer's attention:
// Mistral-7B-v0.1's 4096; null in v0.2 onwards and in Mixtral, so no window).
void read_window(const nlohmann::json& c, const HfFamily& family, const std::string& origin,
                 ModelSpec& m) {
  if (family.window == HfWindow::every_layer) {
    m.sliding_window = first_int(c, {"sliding_window"}, 0, origin, false);
    m.global_attention_every = 0;
    return;
  }
  if (family.window == HfWindow::none) return;
  m.norms_per_layer = 4;  // input, post-attention, pre- and post-feedforward RMSNorms
  m.sliding_window = first_int(c, {"sliding_window"}, 0, origin, false);
  m.global_attention_every = family.window == HfWindow::gemma2
                                 ? 2
                                 : first_int(c, {"sliding_window_pattern"}, 6, origin, false);
  if (family.window == HfWindow::gemma3) m.qk_norm = true;
}

// The family, from text_config's or the top level's model_type, refused by name when unlisted.
const HfFamily& family_of(const nlohmann::json& j, const nlohmann::json& c,
                          const std::string& origin) {
  const std::string type = string_or(c, "model_type", string_or(j, "model_type", ""));
  if (type.empty()) {
    throw InputError(origin + ": model_type", "missing; it names the architecture (supported: " +
                                                  supported_hf_types() + ")");
  }
  const HfFamily* f = find_hf_family(type);
  if (f == nullptr) {
    throw InputError(origin + ": model_type",
                     "'" + type + "' is not a supported decoder-only transformer; supported: " +
                         supported_hf_types());
  }
  // A wrapper whose text_config omits model_type (Gemma 3, Llama 4).
  return f->read_as != nullptr ? *find_hf_family(f->read_as) : *f;
}

// head_dim, or hidden / heads when the config leaves it out, as transformers' attention modules
// compute it; heads that do not divide the hidden size then have no width, as --heads 33 has not.
void read_head_dim(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  if (present(c, {"head_dim"})) {
    m.head_dim = first_int(c, {"head_dim"}, 0, origin, true, 1);
    return;
  }
  if (m.hidden % m.heads != 0) {
    const char* key = c.contains("num_attention_heads") ? "num_attention_heads"
                      : c.contains("n_head")            ? "n_head"
                                                        : "num_heads";
    throw InputError(origin + ": " + key,
                     fmt::format("{} heads do not divide hidden size {} and the config gives no "
                                 "head_dim; give head_dim or a head count that divides {}",
                                 m.heads, m.hidden, m.hidden));
  }
  m.head_dim = m.hidden / m.heads;
}

// Layers, widths, heads, vocabulary and context, with the defaults a family fixes in code.
void read_shape(const nlohmann::json& c, const HfFamily& family, const std::string& origin,
                ModelSpec& m) {
  m.layers = first_int(c, {"num_hidden_layers", "n_layer", "num_layers"}, 0, origin, true, 1);
  m.hidden = first_int(c, {"hidden_size", "n_embd", "d_model"}, 0, origin, true, 1);
  m.heads = first_int(c, {"num_attention_heads", "n_head", "num_heads"}, 0, origin, true, 1);
  m.kv_heads = first_int(c, {"num_key_value_heads", "num_kv_heads"}, m.heads, origin, false, 1);
  if (family.multi_query && flag(c, "multi_query", false, origin) && !c.contains("num_kv_heads"))
    m.kv_heads = 1;
  read_head_dim(c, origin, m);
  const std::initializer_list<const char*> mlp_keys = {"intermediate_size", "n_inner", "ffn_dim",
                                                       "ffn_hidden_size"};
  const bool four_h = family.four_h && !present(c, mlp_keys);
  m.ffn_hidden = first_int(c, mlp_keys, 4 * m.hidden, origin, !four_h, 1);
  if (four_h) {
    m.notes.push_back(fmt::format("{}: no MLP width in the config; {} fixes it at 4 x hidden = {}",
                                  origin, family.type, m.ffn_hidden));
  }
  // A family whose config class defaults the vocabulary (Gemma3TextConfig's 262,208).
  const bool vocab_default = family.vocab > 0 && !present(c, {"vocab_size"});
  m.vocab = vocab_default ? family.vocab
                          : first_int(c, {"vocab_size", "padded_vocab_size"}, 0, origin, true, 1);
  if (vocab_default) {
    m.notes.push_back(fmt::format("{}: no vocab_size; {}", origin, family.vocab_source));
  }
  const int positions_default = family.positions_default;
  m.max_positions = first_int(c, {"max_position_embeddings", "n_positions", "n_ctx"},
                              positions_default, origin, false, 1);
  if (!present(c, {"max_position_embeddings", "n_positions", "n_ctx"})) {
    m.notes.push_back(
        fmt::format("{}: no max_position_embeddings; assumed {}", origin, positions_default));
  }
  // The model's own context: Llama 3.1-style rope scaling names the pre-training one.
  int original = 0;
  if (c.contains("rope_scaling") && c.at("rope_scaling").is_object()) {
    original = first_int(c.at("rope_scaling"), {"original_max_position_embeddings"}, 0,
                         origin + ": rope_scaling", false, 1);
  }
  m.seq_len = original > 0 ? original : m.max_positions;
}

// MLP, norm, positions, tying, biases and dropout: what the family's modeling code fixes, unless
// the config overrides it.
void read_conventions(const nlohmann::json& j, const nlohmann::json& c, const HfFamily& family,
                      const std::string& origin, ModelSpec& m) {
  const bool gpt_like = family.gpt_like;
  m.mlp = family.mlp;
  m.norm = gpt_like ? NormKind::layernorm : NormKind::rmsnorm;
  m.positions = family.positions;
  // transformers' PretrainedConfig ties by default; Llama-family configs default to untied.
  m.tied_embeddings =
      flag(c, "tie_word_embeddings", flag(j, "tie_word_embeddings", family.tied, origin), origin);
  const bool attention_bias = flag(c, "attention_bias", gpt_like, origin);
  m.qkv_bias = flag(c, "qkv_bias", attention_bias || family.qkv_bias, origin);
  m.out_bias = attention_bias;
  m.mlp_bias = flag(c, "mlp_bias", gpt_like, origin);
  m.qk_norm = family.qk_norm;  // q_norm and k_norm over head_dim
  m.dropout = first_number(c, {"attention_dropout", "attn_pdrop", "resid_pdrop", "hidden_dropout",
                               "embd_pdrop", "dropout"}) > 0;
}

// RoPE base and scaling (transformers' modeling_rope_utils.py: rope_scaling's "rope_type", or
// the older "type"), the norm epsilon, and the MoE router's scoring (DeepSeek's scoring_func,
// routed_scaling_factor, n_group / topk_group, aux_loss_alpha with seq_aux; Mixtral's and
// Qwen-MoE's router_aux_loss_coef). Read as given; absent fields stay 0 (the launcher's default).
void read_training_fields(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.rope.theta = first_number(c, {"rope_theta", "rotary_emb_base"});
  // NemotronConfig / GPT-NeoX / Phi: the share of each head's channels the rotation covers.
  m.rope.fraction = first_number(c, {"partial_rotary_factor", "rotary_pct"});
  if (m.rope.fraction <= 0 || m.rope.fraction > 1) m.rope.fraction = 1;
  if (c.contains("rope_scaling") && c.at("rope_scaling").is_object()) {
    const nlohmann::json& r = c.at("rope_scaling");
    const std::string kind = string_or(r, "rope_type", string_or(r, "type", "default"));
    if (kind == "llama3" || kind == "yarn" || kind == "linear") {
      m.rope.scaling = parse_rope_scaling(kind, origin + ": rope_scaling.rope_type");
      m.rope.factor = first_number(r, {"factor"});
      m.rope.original_positions =
          first_int(r, {"original_max_position_embeddings"}, 0, origin, false);
      m.rope.low_freq_factor = first_number(r, {"low_freq_factor"});
      m.rope.high_freq_factor = first_number(r, {"high_freq_factor"});
      m.rope.beta_fast = first_number(r, {"beta_fast"});
      m.rope.beta_slow = first_number(r, {"beta_slow"});
      m.rope.mscale = first_number(r, {"mscale"});
      m.rope.mscale_all_dim = first_number(r, {"mscale_all_dim"});
    } else if (kind != "default") {
      m.notes.push_back(fmt::format(
          "{}: rope_scaling type '{}' is not carried into launcher configs", origin, kind));
    }
  }
  m.norm_epsilon = first_number(
      c, {"rms_norm_eps", "layer_norm_epsilon", "layer_norm_eps", "norm_epsilon", "norm_eps"});
  if (!m.is_moe()) return;
  // A family may fix the scoring in code (Nemotron-H's sigmoid router): that is the default.
  const char* score = m.router.score == RouterScore::sigmoid ? "sigmoid" : "softmax";
  m.router.score = string_or(c, "scoring_func", score) == "sigmoid" ? RouterScore::sigmoid
                                                                     : RouterScore::softmax;
  m.router.topk_scale = first_number(c, {"routed_scaling_factor"});
  const std::string method = string_or(c, "topk_method", "");
  if (method == "noaux_tc" || method == "group_limited_greedy") {
    m.router.groups = first_int(c, {"n_group"}, 0, origin, false);
    m.router.group_topk = first_int(c, {"topk_group"}, 0, origin, false);
  }
  m.router.aux_loss_coeff = first_number(c, {"router_aux_loss_coef", "aux_loss_alpha"});
  m.router.sequence_aux_loss = flag(c, "seq_aux", false, origin);
}

}  // namespace

ModelSpec model_from_hf_config(const std::string& text, const std::string& origin) {
  const nlohmann::json j = parse_json(text, origin);
  if (!j.is_object()) throw InputError(origin, "expected a JSON object");
  // Multimodal wrappers (Llama 4, Gemma 3) keep the language model under text_config.
  const bool nested = j.contains("text_config") && j.at("text_config").is_object();
  const nlohmann::json& c = nested ? j.at("text_config") : j;
  const HfFamily& family = family_of(j, c, origin);
  const std::string type = family.type;
  ModelSpec m;
  m.name = string_or(c, "_name_or_path", string_or(j, "_name_or_path", type));
  m.model_type = type;
  m.source = origin + " (Hugging Face " + type + " config)";
  read_shape(c, family, origin, m);
  read_conventions(j, c, family, origin, m);
  read_moe(c, family, origin, m);
  read_mla(c, origin, m);
  read_window(c, family, origin, m);
  if (family.conventions != nullptr) family.conventions(c, origin, m);
  read_training_fields(c, origin, m);
  check_architecture(m, origin);
  return m;
}

}  // namespace shardplan
