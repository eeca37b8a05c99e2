// Conventions of the newer families, each as its transformers modeling_*.py fixes them:
//   gpt_oss   (modeling_gpt_oss.py): SwiGLU experts with biases on gate_up and down, a router with
//             a bias, Q/K/V/O biases, one attention sink per head, sliding-window attention on
//             alternate layers (layer_types), RMSNorm, untied embeddings.
//   nemotron  (modeling_nemotron.py): a two-matrix squared-ReLU MLP (hidden_act "relu2"),
//             LayerNorm1P (a LayerNorm with weight and bias), no linear biases unless the config
//             sets attention_bias / mlp_bias, untied embeddings, partial rotary.
//   glm4_moe  (modeling_glm4_moe.py): DeepSeek-V3-style experts and MTP, a router with an
//             e_score_correction_bias, Q/K/V biases (attention_bias) but none on o_proj,
//             optional QK-norm (use_qk_norm).
//   kimi_k2   (DeepseekV3ForCausalLM: Kimi K2 reuses DeepSeek-V3's architecture under its own
//             model_type, Moonshot's deployment guide): MLA and DeepSeek-V3 MoE.
//   qwen3_next (modeling_qwen3_next.py): Qwen-MoE experts with a gated shared expert; three of
//             every four layers a gated DeltaNet (Qwen3NextGatedDeltaNet), the fourth gated
//             softmax attention with QK-norm (q_proj doubled: attn_output_gate).
//   minimax   (modeling_minimax.py, MiniMax-Text-01-hf): Mixtral-style experts; layer_types
//             name each layer lightning ("linear_attention", MiniMaxLightningAttention) or
//             softmax ("full_attention"); untied embeddings, no biases.
//   nemotron_h (modeling_nemotron_h.py): one block per layer after hybrid_override_pattern
//             (NemotronHBlock: RMSNorm, then a Mamba-2 mixer, attention, a squared-ReLU MLP or a
//             MoE, then the residual); attention without RoPE or biases; untied embeddings.
#include "hf_families.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "hf_fields.hpp"
#include "shardplan/error.hpp"

namespace shardplan {
namespace {

// gpt-oss's layer_types: "sliding_attention" and "full_attention" repeating with the full layer
// last in each period (gpt-oss: period 2). Any other order has no layout here.
void read_layer_pattern(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.sliding_window = first_int(c, {"sliding_window"}, 0, origin, false);
  if (m.sliding_window == 0) return;
  const auto it = c.find("layer_types");
  if (it == c.end() || it->is_null()) {
    throw InputError(origin + ": layer_types",
                     "missing; with a sliding_window it says which layers are windowed");
  }
  if (!it->is_array() || static_cast<int>(it->size()) != m.layers) {
    throw InputError(
        origin + ": layer_types",
        fmt::format("expected an array of {} layer types (num_hidden_layers)", m.layers));
  }
  int period = 0;
  for (int i = 0; i < m.layers; ++i) {
    const auto& t = (*it)[static_cast<size_t>(i)];
    if (t == "full_attention") {
      period = i + 1;
      break;
    }
  }
  bool regular = period > 0 && m.layers % period == 0;
  for (int i = 0; regular && i < m.layers; ++i) {
    const bool full = (i + 1) % period == 0;
    regular = (*it)[static_cast<size_t>(i)] == (full ? "full_attention" : "sliding_attention");
  }
  if (!regular) {
    throw InputError(origin + ": layer_types",
                     "only a repeating run of sliding_attention layers closed by one "
                     "full_attention layer is modelled");
  }
  m.global_attention_every = period;
}

void gpt_oss(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.mlp = MlpKind::swiglu;
  m.norm = NormKind::rmsnorm;
  m.mlp_bias = true;         // gate_up_proj_bias and down_proj_bias of every expert
  m.router_linear_bias = true;  // GptOssTopKRouter: a Linear, weight [E, h] and bias [E]
  // GptOssExperts: gate and up clamped to swiglu_limit before the gated activation.
  const auto limit = c.find("swiglu_limit");
  m.activation_clamp = limit != c.end() && limit->is_number() ? limit->get<double>() : 7.0;
  m.attention_sinks = true;  // GptOssAttention.sinks: one per head
  m.qkv_bias = m.out_bias = flag(c, "attention_bias", true, origin);
  read_layer_pattern(c, origin, m);
}

void nemotron(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  const auto act = c.find("hidden_act");
  if (act != c.end() && *act != "relu2") {
    throw InputError(
        origin + ": hidden_act",
        "Nemotron's MLP is modelled with squared ReLU (\"relu2\") only, got " + act->dump());
  }
  m.mlp = MlpKind::squared_relu;
  m.norm = NormKind::layernorm;  // NemotronLayerNorm1P: weight and bias
  m.norm_zero_centered = true;   // ... applied as weight + 1
  m.qkv_bias = m.out_bias = flag(c, "attention_bias", false, origin);
  m.mlp_bias = flag(c, "mlp_bias", false, origin);
}

void glm4_moe(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.mlp = MlpKind::swiglu;
  m.norm = NormKind::rmsnorm;
  m.qkv_bias = flag(c, "attention_bias", false, origin);
  m.out_bias = false;  // Glm4MoeAttention's o_proj has no bias whatever attention_bias says
  m.qk_norm = flag(c, "use_qk_norm", false, origin);
  if (m.is_moe()) m.router_bias = true;  // Glm4MoeTopkRouter.e_score_correction_bias
}

void qwen3_next(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.mlp = MlpKind::swiglu;
  m.norm = NormKind::rmsnorm;
  m.qk_norm = true;                // Qwen3NextAttention.q_norm / k_norm over head_dim
  m.attention_output_gate = true;  // q_proj: heads x head_dim x 2, the second half a gate
  m.full_attention_every = first_int(c, {"full_attention_interval"}, 0, origin, true, 1);
  m.linear.key_heads = first_int(c, {"linear_num_key_heads"}, 0, origin, true, 1);
  m.linear.value_heads = first_int(c, {"linear_num_value_heads"}, 0, origin, true, 1);
  m.linear.key_head_dim = first_int(c, {"linear_key_head_dim"}, 0, origin, true, 1);
  m.linear.value_head_dim = first_int(c, {"linear_value_head_dim"}, 0, origin, true, 1);
  m.linear.conv_kernel = first_int(c, {"linear_conv_kernel_dim"}, 0, origin, true, 1);
  const auto types = c.find("layer_types");
  if (types != c.end() && types->is_array()) {
    bool same = static_cast<int>(types->size()) == m.layers;
    for (int i = 0; same && i < m.layers; ++i) {
      same = (*types)[static_cast<size_t>(i)] ==
             (m.is_linear_attention_layer(i) ? "linear_attention" : "full_attention");
    }
    if (!same) {
      throw InputError(origin + ": layer_types",
                       fmt::format("only every {}-th layer full_attention and the rest "
                                   "linear_attention (full_attention_interval) is modelled",
                                   m.full_attention_every));
    }
  }
}

// MiniMax-01 (MiniMaxConfig): which layers run lightning attention, from layer_types (or the
// original remote code's attn_type_list, 1 = softmax), as a repeating run closed by one softmax
// layer; blocks of block_size tokens (MiniMaxConfig's default 256).
void minimax(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  m.mlp = MlpKind::swiglu;
  m.norm = NormKind::rmsnorm;
  m.linear.mixer = MixerKind::lightning;
  m.linear.lightning_block = first_int(c, {"block_size"}, 256, origin, false, 1);
  const char* key = c.contains("layer_types") ? "layer_types" : "attn_type_list";
  const auto it = c.find(key);
  if (it == c.end() || !it->is_array() || static_cast<int>(it->size()) != m.layers) {
    throw InputError(origin + ": layer_types",
                     fmt::format("expected an array of {} layer types (num_hidden_layers) naming "
                                 "each layer linear_attention or full_attention",
                                 m.layers));
  }
  auto softmax = [&](int i) {
    const auto& t = (*it)[static_cast<size_t>(i)];
    return t == "full_attention" || t == 1;
  };
  int period = 0;
  while (period < m.layers && !softmax(period)) ++period;
  ++period;
  bool regular = period > 1 && m.layers % period == 0;
  for (int i = 0; regular && i < m.layers; ++i) regular = softmax(i) == ((i + 1) % period == 0);
  if (!regular) {
    throw InputError(origin + ": " + key,
                     "only a repeating run of lightning (linear_attention) layers closed by one "
                     "softmax (full_attention) layer is modelled");
  }
  m.full_attention_every = period;
}

// Nemotron-H (NemotronHConfig): hybrid_override_pattern gives each layer's block; the Mamba-2
// fields size the mixer (NemotronHMamba2Mixer reads use_bias for both projections); the MoE
// blocks ('E', Nemotron 3) are DeepSeek-style: sigmoid routing with a correction bias, a shared
// expert of moe_shared_expert_intermediate_size, non-gated squared-ReLU experts.
void nemotron_h(const nlohmann::json& c, const std::string& origin, ModelSpec& m) {
  const std::string field = origin + ": hybrid_override_pattern";
  const auto it = c.find("hybrid_override_pattern");
  if (it == c.end() || !it->is_string()) {
    throw InputError(field, "missing; a nemotron_h config names each layer's block there "
                            "(M Mamba-2, * attention, - MLP, E MoE)");
  }
  m.block_pattern = it->get<std::string>();
  if (static_cast<int>(m.block_pattern.size()) != m.layers) {
    throw InputError(field, fmt::format("{} blocks for {} layers (num_hidden_layers); one "
                                        "character per layer",
                                        m.block_pattern.size(), m.layers));
  }
  const auto act = c.find("mlp_hidden_act");
  if (act != c.end() && *act != "relu2") {
    throw InputError(origin + ": mlp_hidden_act",
                     "Nemotron-H's MLP is modelled with squared ReLU (\"relu2\") only, got " +
                         act->dump());
  }
  m.mlp = MlpKind::squared_relu;
  m.norm = NormKind::rmsnorm;
  m.positions = PositionKind::none;  // NemotronHAttention applies no rotary embedding
  m.qkv_bias = m.out_bias = flag(c, "attention_bias", false, origin);
  m.mlp_bias = flag(c, "mlp_bias", false, origin);
  m.head_dim = first_int(c, {"head_dim", "attention_head_dim"}, m.head_dim, origin, false, 1);
  if (m.block_pattern.find('M') != std::string::npos) {
    m.mamba.heads = first_int(c, {"mamba_num_heads"}, 0, origin, true, 1);
    m.mamba.head_dim = first_int(c, {"mamba_head_dim"}, 0, origin, true, 1);
    m.mamba.state = first_int(c, {"ssm_state_size"}, 0, origin, true, 1);
    m.mamba.groups = first_int(c, {"n_groups"}, 1, origin, false, 1);
    m.mamba.conv_kernel = first_int(c, {"conv_kernel"}, 4, origin, false, 1);
    m.mamba.chunk = first_int(c, {"chunk_size"}, 128, origin, false, 1);
    m.mamba.conv_bias = flag(c, "use_conv_bias", true, origin);
    m.mamba.proj_bias = flag(c, "use_bias", false, origin);
  }
  if (m.block_pattern.find('E') == std::string::npos) {
    m.experts = m.experts_per_token = 0;  // no MoE block: n_routed_experts is unused
  } else {
    m.experts = first_int(c, {"n_routed_experts"}, 0, origin, true, 2);
    m.experts_per_token = first_int(c, {"num_experts_per_tok"}, 0, origin, true, 1);
    m.dense_ffn_hidden = m.ffn_hidden;
    m.ffn_hidden = first_int(c, {"moe_intermediate_size"}, 0, origin, true, 1);
    m.shared_ffn_hidden =
        first_int(c, {"n_shared_experts"}, 0, origin, false) > 0
            ? first_int(c, {"moe_shared_expert_intermediate_size"}, 0, origin, true, 1)
            : 0;
    m.router_bias = true;  // NemotronHTopkRouter.e_score_correction_bias
    m.router.score = RouterScore::sigmoid;
  }
}

// Kimi K2 runs DeepSeek-V3's modeling code: SwiGLU and RMSNorm, the rest as DeepSeek-V3.
void kimi_k2(const nlohmann::json&, const std::string&, ModelSpec& m) {
  m.mlp = MlpKind::swiglu;
  m.norm = NormKind::rmsnorm;
}

// A gated (SwiGLU) Llama-like family: RMSNorm, rotary positions, untied, no biases.
constexpr HfFamily gated(const char* type) {
  HfFamily f{type};
  f.mlp = MlpKind::swiglu;
  return f;
}

// Gemma's GeGLU with tied embeddings.
constexpr HfFamily gemma(const char* type) {
  HfFamily f{type};
  f.mlp = MlpKind::geglu;
  f.tied = true;
  return f;
}

// A GPT-2-like family: a two-matrix GeLU MLP, LayerNorm, biases, tied embeddings.
constexpr HfFamily gpt(const char* type) {
  HfFamily f{type};
  f.gpt_like = true;
  f.tied = true;
  return f;
}

// A family of 2025 whose modeling code its own function reads.
constexpr HfFamily newer(const char* type, void (*conventions)(const nlohmann::json&,
                                                               const std::string&, ModelSpec&)) {
  HfFamily f{type};
  f.conventions = conventions;
  return f;
}

template <typename F>
constexpr HfFamily with(HfFamily f, F change) {
  change(f);
  return f;
}

// The rows, from each family's transformers modeling_*.py and configuration_*.py.
const HfFamily kFamilies[] = {
    gated("llama"),
    with(gated("mistral"), [](HfFamily& f) { f.window = HfWindow::every_layer; }),
    with(gated("mixtral"), [](HfFamily& f) { f.window = HfWindow::every_layer; }),
    with(gated("qwen2"), [](HfFamily& f) { f.qkv_bias = true; }),
    with(gated("qwen2_moe"),
         [](HfFamily& f) {
           f.qkv_bias = true;
           f.moe = HfMoeKeys::qwen;
         }),
    with(gated("qwen3"), [](HfFamily& f) { f.qk_norm = true; }),
    with(gated("qwen3_moe"),
         [](HfFamily& f) {
           f.qk_norm = true;
           f.moe = HfMoeKeys::qwen;
         }),
    gemma("gemma"),
    with(gemma("gemma2"), [](HfFamily& f) { f.window = HfWindow::gemma2; }),
    // Gemma 3's text_config leaves the vocabulary and the context to Gemma3TextConfig's
    // defaults (262,208 and 131,072); the multimodal wrapper names the text family.
    with(gemma("gemma3"), [](HfFamily& f) { f.read_as = "gemma3_text"; }),
    with(gemma("gemma3_text"),
         [](HfFamily& f) {
           f.window = HfWindow::gemma3;
           f.vocab = 262'208;
           f.vocab_source = "transformers' Gemma3TextConfig default 262,208";
           f.positions_default = 131'072;
         }),
    gated("olmo"),
    gated("olmo2"),
    gated("phi3"),
    gated("granite"),
    gated("cohere"),
    gated("yi"),
    gated("internlm2"),
    with(gated("deepseek_v2"), [](HfFamily& f) { f.moe = HfMoeKeys::deepseek; }),
    with(gated("deepseek_v3"), [](HfFamily& f) { f.moe = HfMoeKeys::deepseek; }),
    with(gated("llama4"), [](HfFamily& f) { f.read_as = "llama4_text"; }),
    with(gated("llama4_text"), [](HfFamily& f) { f.moe = HfMoeKeys::llama4; }),
    gated("baichuan"),
    with(gpt("gpt2"),
         [](HfFamily& f) {
           f.positions = PositionKind::learned;
           f.four_h = true;
         }),
    with(gpt("gpt_neox"), [](HfFamily& f) { f.tied = false; }),
    with(gpt("gptj"), [](HfFamily& f) { f.four_h = true; }),
    with(gpt("gpt_bigcode"),
         [](HfFamily& f) {
           f.positions = PositionKind::learned;
           f.four_h = true;
         }),
    with(gpt("opt"), [](HfFamily& f) { f.positions = PositionKind::learned; }),
    with(gpt("bloom"),
         [](HfFamily& f) {
           f.positions = PositionKind::alibi;
           f.four_h = true;
         }),
    with(gpt("falcon"),
         [](HfFamily& f) {
           f.four_h = true;
           f.multi_query = true;
         }),
    gpt("phi"),
    gpt("starcoder2"),
    newer("gpt_oss", gpt_oss),
    newer("nemotron", nemotron),
    with(newer("glm4_moe", glm4_moe), [](HfFamily& f) { f.moe = HfMoeKeys::deepseek; }),
    with(newer("kimi_k2", kimi_k2), [](HfFamily& f) { f.moe = HfMoeKeys::deepseek; }),
    with(newer("qwen3_next", qwen3_next), [](HfFamily& f) { f.moe = HfMoeKeys::qwen; }),
    newer("nemotron_h", nemotron_h),
    newer("minimax", minimax),
};

}  // namespace

const HfFamily* find_hf_family(const std::string& type) {
  for (const HfFamily& f : kFamilies)
    if (type == f.type) return &f;
  return nullptr;
}

std::string supported_hf_types() {
  std::vector<std::string> types;
  for (const HfFamily& f : kFamilies) types.emplace_back(f.type);
  std::sort(types.begin(), types.end());
  std::string out;
  for (const auto& t : types) out += (out.empty() ? "" : ", ") + t;
  return out;
}

}  // namespace shardplan
