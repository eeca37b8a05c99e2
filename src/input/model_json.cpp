// Reads and checks shardplan model files; presets under profiles/models use this format.
#include "model_json.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <type_traits>

#include "json_reader.hpp"
#include "shardplan/error.hpp"
#include "shardplan/model.hpp"

namespace shardplan {

void check_architecture(const ModelSpec& m, const std::string& where) {
  auto need = [&](bool ok, const char* key, const std::string& what) {
    if (!ok) throw InputError(where + ": " + key, what);
  };
  need(m.layers >= 1 && m.layers <= 100000, "layers", "must be between 1 and 100000");
  need(m.hidden >= 1 && m.hidden <= 10'000'000, "hidden", "must be between 1 and 10^7");
  need(m.heads >= 1, "heads", "must be at least 1");
  need(m.kv_heads >= 1 && m.kv_heads <= m.heads && m.heads % m.kv_heads == 0, "kv_heads",
       fmt::format("{} must divide the {} attention heads", m.kv_heads, m.heads));
  need(m.head_dim >= 1, "head_dim", "must be at least 1");
  need(m.ffn_hidden >= 1, "ffn_hidden", "must be at least 1");
  need(m.vocab >= 1, "vocab", "must be at least 1");
  need(m.experts == 0 ||
           (m.experts >= 2 && m.experts_per_token >= 1 && m.experts_per_token <= m.experts),
       "experts", "a mixture of experts needs experts >= 2 and 1 <= experts_per_token <= experts");
  need(m.moe_layer_step >= 1 && m.first_dense_layers >= 0 && m.first_dense_layers < m.layers,
       "first_dense_layers", "needs 0 <= first_dense_layers < layers and moe_layer_step >= 1");
  need(m.dense_ffn_hidden >= 0 && m.shared_ffn_hidden >= 0, "shared_ffn_hidden",
       "MLP widths cannot be negative");
  need(m.mla.kv_lora_rank == 0 || (m.mla.qk_nope_head_dim >= 1 && m.mla.v_head_dim >= 1 &&
                                   m.mla.qk_rope_head_dim >= 0 && m.mla.q_lora_rank >= 0),
       "kv_lora_rank", "latent attention needs qk_nope_head_dim and v_head_dim >= 1");
  need(m.norms_per_layer >= 0 && m.norms_per_layer <= 8, "norms_per_layer", "must be 0-8");
  need(m.mtp_layers >= 0 && m.sliding_window >= 0 && m.global_attention_every >= 0, "mtp_layers",
       "mtp_layers, sliding_window and global_attention_every cannot be negative");
  // A gated DeltaNet needs its heads and widths; its value heads come in groups of key heads.
  need(!m.is_hybrid() || m.linear.mixer != MixerKind::gated_deltanet ||
           (m.linear.key_heads >= 1 && m.linear.value_heads >= m.linear.key_heads &&
            m.linear.value_heads % m.linear.key_heads == 0 && m.linear.key_head_dim >= 1 &&
            m.linear.value_head_dim >= 1 && m.linear.conv_kernel >= 1),
       "full_attention_every",
       "linear-attention layers need linear_key_heads, linear_value_heads (a multiple of the "
       "key heads), linear_key_head_dim, linear_value_head_dim and linear_conv_kernel >= 1");
  need(!m.has_block_pattern() ||
           (static_cast<int>(m.block_pattern.size()) == m.layers &&
            m.block_pattern.find_first_not_of("M*-E") == std::string::npos &&
            !m.is_hybrid() && m.first_dense_layers == 0 && m.moe_layer_step == 1),
       "block_pattern",
       fmt::format("one character per layer ({}): M Mamba-2, * attention, - MLP, E MoE; not "
                   "with full_attention_every, first_dense_layers or moe_layer_step",
                   m.layers));
  const bool moe_blocks = m.block_pattern.find('E') != std::string::npos;
  need(!m.has_block_pattern() || moe_blocks == m.is_moe(), "block_pattern",
       "MoE blocks (E) need experts >= 2, and experts need MoE blocks");
  need(m.block_pattern.find('M') == std::string::npos ||
           (m.mamba.heads >= 1 && m.mamba.head_dim >= 1 && m.mamba.state >= 1 &&
            m.mamba.groups >= 1 && m.mamba.heads % m.mamba.groups == 0 &&
            m.mamba.conv_kernel >= 1 && m.mamba.chunk >= 1),
       "mamba_heads",
       "Mamba-2 blocks (M) need mamba_heads, mamba_head_dim, mamba_state, mamba_groups (dividing "
       "the heads), mamba_conv_kernel and mamba_chunk >= 1");
  need(m.linear.mixer == MixerKind::gated_deltanet ||
           (m.linear.mixer == MixerKind::lightning &&
            (!m.is_hybrid() || m.linear.lightning_block >= 1)),
       "linear_mixer",
       "linear layers are gated-deltanet or lightning (lightning with lightning_block >= 1)");
  need(m.rope.fraction > 0 && m.rope.fraction <= 1 && m.activation_clamp >= 0 &&
           m.rope.theta >= 0 && m.rope.factor >= 0 && m.norm_epsilon >= 0 && m.norm_epsilon < 1,
       "rope_theta",
       "rope_theta, rope_scaling.factor and activation_clamp cannot be negative; rotary_fraction "
       "is in (0, 1]; norm_epsilon is in [0, 1)");
  need(m.router.groups >= 0 && m.router.group_topk >= 0 && m.router.group_topk <= m.router.groups &&
           (m.router.groups == 0 || m.experts % m.router.groups == 0),
       "router", "router.group_topk must be at most router.groups, which must divide experts");
}

namespace {

// A key of the model JSON and the field it fills in `Group`: ModelSpec itself for the flat
// fields, or one of its member groups (MlaSpec, LinearMixerSpec, MambaSpec), whose keys keep
// config.json-style flat names.
template <typename Group, typename T>
struct Key {
  const char* key;
  T Group::*field;
  T plain;  // the value of a plain decoder, not written
};
constexpr Key<ModelSpec, int> kIntKeys[] = {
    {"first_dense_layers", &ModelSpec::first_dense_layers, 0},
    {"moe_layer_step", &ModelSpec::moe_layer_step, 1},
    {"dense_ffn_hidden", &ModelSpec::dense_ffn_hidden, 0},
    {"shared_ffn_hidden", &ModelSpec::shared_ffn_hidden, 0},
    {"norms_per_layer", &ModelSpec::norms_per_layer, 2},
    {"mtp_layers", &ModelSpec::mtp_layers, 0},
    {"sliding_window", &ModelSpec::sliding_window, 0},
    {"global_attention_every", &ModelSpec::global_attention_every, 0},
    {"full_attention_every", &ModelSpec::full_attention_every, 0},
};
constexpr Key<ModelSpec, bool> kBoolKeys[] = {
    {"shared_expert_gate", &ModelSpec::shared_expert_gate, false},
    {"router_bias", &ModelSpec::router_bias, false},
    {"router_linear_bias", &ModelSpec::router_linear_bias, false},
    {"norm_zero_centered", &ModelSpec::norm_zero_centered, false},
    {"qk_norm", &ModelSpec::qk_norm, false},
    {"attention_sinks", &ModelSpec::attention_sinks, false},
    {"attention_output_gate", &ModelSpec::attention_output_gate, false}};
constexpr Key<MlaSpec, int> kMlaKeys[] = {
    {"q_lora_rank", &MlaSpec::q_lora_rank, 0},
    {"kv_lora_rank", &MlaSpec::kv_lora_rank, 0},
    {"qk_rope_head_dim", &MlaSpec::qk_rope_head_dim, 0},
    {"qk_nope_head_dim", &MlaSpec::qk_nope_head_dim, 0},
    {"v_head_dim", &MlaSpec::v_head_dim, 0},
};
constexpr Key<LinearMixerSpec, int> kLinearKeys[] = {
    {"linear_key_heads", &LinearMixerSpec::key_heads, 0},
    {"linear_value_heads", &LinearMixerSpec::value_heads, 0},
    {"linear_key_head_dim", &LinearMixerSpec::key_head_dim, 0},
    {"linear_value_head_dim", &LinearMixerSpec::value_head_dim, 0},
    {"linear_conv_kernel", &LinearMixerSpec::conv_kernel, 0},
    {"lightning_block", &LinearMixerSpec::lightning_block, 0},
};
constexpr Key<MambaSpec, int> kMambaKeys[] = {
    {"mamba_heads", &MambaSpec::heads, 0},
    {"mamba_head_dim", &MambaSpec::head_dim, 0},
    {"mamba_state", &MambaSpec::state, 0},
    {"mamba_groups", &MambaSpec::groups, 0},
    {"mamba_conv_kernel", &MambaSpec::conv_kernel, 0},
    {"mamba_chunk", &MambaSpec::chunk, 0},
};
constexpr Key<MambaSpec, bool> kMambaBoolKeys[] = {
    {"mamba_conv_bias", &MambaSpec::conv_bias, true},
    {"mamba_proj_bias", &MambaSpec::proj_bias, false}};

template <typename Group, typename T, std::size_t N>
void read_keys(StrictObject& o, Group& g, const Key<Group, T> (&keys)[N]) {
  for (const Key<Group, T>& k : keys) {
    if constexpr (std::is_same_v<T, bool>)
      g.*k.field = o.boolean_or(k.key, k.plain);
    else
      g.*k.field = o.integer_or(k.key, k.plain);
  }
}

template <typename Group, typename T, std::size_t N>
void write_keys(const Group& g, nlohmann::json& j, const Key<Group, T> (&keys)[N]) {
  for (const Key<Group, T>& k : keys) {
    if (g.*k.field != k.plain) j[k.key] = g.*k.field;
  }
}

}  // namespace

namespace {

// "rope_scaling": {"type", "factor", "original_max_positions", llama3's "low_freq_factor" /
// "high_freq_factor", yarn's "beta_fast" / "beta_slow" / "mscale" / "mscale_all_dim"}.
void read_rope(StrictObject& o, ModelSpec& m) {
  m.rope.theta = o.number_or("rope_theta", 0);
  m.rope.fraction = o.number_or("rotary_fraction", 1);
  m.activation_clamp = o.number_or("activation_clamp", 0);
  if (!o.has("rope_scaling")) return;
  StrictObject r = o.object("rope_scaling");
  RopeSpec& p = m.rope;
  p.scaling = parse_rope_scaling(r.string("type"), r.field("type"));
  p.factor = r.number_or("factor", 0);
  p.original_positions = r.integer_or("original_max_positions", 0);
  p.low_freq_factor = r.number_or("low_freq_factor", 0);
  p.high_freq_factor = r.number_or("high_freq_factor", 0);
  p.beta_fast = r.number_or("beta_fast", 0);
  p.beta_slow = r.number_or("beta_slow", 0);
  p.mscale = r.number_or("mscale", 0);
  p.mscale_all_dim = r.number_or("mscale_all_dim", 0);
  r.finish();
}

// "router": {"score", "topk_scale", "groups", "group_topk", "aux_loss_coeff",
// "sequence_aux_loss"}.
void read_router(StrictObject& o, ModelSpec& m) {
  if (!o.has("router")) return;
  StrictObject r = o.object("router");
  RouterSpec& p = m.router;
  p.score = parse_router_score(r.string_or("score", "softmax"), r.field("score"));
  p.topk_scale = r.number_or("topk_scale", 0);
  p.groups = r.integer_or("groups", 0);
  p.group_topk = r.integer_or("group_topk", 0);
  p.aux_loss_coeff = r.number_or("aux_loss_coeff", 0);
  p.sequence_aux_loss = r.boolean_or("sequence_aux_loss", false);
  r.finish();
}

void put_if(nlohmann::json& j, const char* key, double v) {
  if (v != 0) j[key] = v;
}

nlohmann::json rope_json(const RopeSpec& p) {
  nlohmann::json r = {{"type", to_string(p.scaling)}};
  put_if(r, "factor", p.factor);
  if (p.original_positions > 0) r["original_max_positions"] = p.original_positions;
  put_if(r, "low_freq_factor", p.low_freq_factor);
  put_if(r, "high_freq_factor", p.high_freq_factor);
  put_if(r, "beta_fast", p.beta_fast);
  put_if(r, "beta_slow", p.beta_slow);
  put_if(r, "mscale", p.mscale);
  put_if(r, "mscale_all_dim", p.mscale_all_dim);
  return r;
}

nlohmann::json router_json(const RouterSpec& p) {
  nlohmann::json r = {{"score", to_string(p.score)}};
  put_if(r, "topk_scale", p.topk_scale);
  if (p.groups > 0) r["groups"] = p.groups;
  if (p.group_topk > 0) r["group_topk"] = p.group_topk;
  put_if(r, "aux_loss_coeff", p.aux_loss_coeff);
  if (p.sequence_aux_loss) r["sequence_aux_loss"] = true;
  return r;
}

}  // namespace

void read_extended_architecture(StrictObject& o, ModelSpec& m) {
  m.model_type = o.string_or("hf_model_type", "");
  read_keys(o, m, kIntKeys);
  read_keys(o, m.mla, kMlaKeys);
  read_keys(o, m.linear, kLinearKeys);
  read_keys(o, m.mamba, kMambaKeys);
  read_keys(o, m, kBoolKeys);
  read_keys(o, m.mamba, kMambaBoolKeys);
  m.block_pattern = o.string_or("block_pattern", "");
  m.linear.mixer =
      parse_mixer(o.string_or("linear_mixer", "gated-deltanet"), o.field("linear_mixer"));
  read_rope(o, m);
  m.norm_epsilon = o.number_or("norm_epsilon", 0);
  read_router(o, m);
}

void write_extended_architecture(const ModelSpec& m, nlohmann::json& j) {
  if (!m.model_type.empty()) j["hf_model_type"] = m.model_type;
  write_keys(m, j, kIntKeys);
  write_keys(m.mla, j, kMlaKeys);
  write_keys(m.linear, j, kLinearKeys);
  write_keys(m.mamba, j, kMambaKeys);
  write_keys(m, j, kBoolKeys);
  write_keys(m.mamba, j, kMambaBoolKeys);
  if (m.has_block_pattern()) j["block_pattern"] = m.block_pattern;
  if (m.linear.mixer != MixerKind::gated_deltanet) j["linear_mixer"] = to_string(m.linear.mixer);
  put_if(j, "rope_theta", m.rope.theta);
  if (m.rope.fraction != 1) j["rotary_fraction"] = m.rope.fraction;
  put_if(j, "activation_clamp", m.activation_clamp);
  if (m.rope.scaling != RopeScaling::none) j["rope_scaling"] = rope_json(m.rope);
  put_if(j, "norm_epsilon", m.norm_epsilon);
  if (m.is_moe()) j["router"] = router_json(m.router);
}

ModelSpec model_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  ModelSpec m;
  m.name = o.string("name");
  o.strings_or_empty("aliases");
  m.source = o.string_or("source", where);
  m.layers = o.integer("layers");
  m.hidden = o.integer("hidden");
  m.heads = o.integer("heads");
  m.kv_heads = o.integer_or("kv_heads", m.heads);
  m.head_dim = o.integer_or("head_dim", m.heads > 0 ? m.hidden / m.heads : 0);
  m.ffn_hidden = o.integer("ffn_hidden");
  m.vocab = o.integer("vocab");
  m.mlp = parse_mlp(o.string_or("mlp", "gelu"), o.field("mlp"));
  m.norm = parse_norm(o.string_or("norm", "layernorm"), o.field("norm"));
  m.positions = parse_positions(o.string_or("positions", "learned"), o.field("positions"));
  m.seq_len = o.integer_or("seq_len", 2048);
  m.max_positions = o.integer_or("max_positions", m.seq_len);
  m.tied_embeddings = o.boolean_or("tied_embeddings", true);
  m.qkv_bias = o.boolean_or("qkv_bias", false);
  m.out_bias = o.boolean_or("out_bias", false);
  m.mlp_bias = o.boolean_or("mlp_bias", false);
  o.boolean_or("parallel_residual", false);  // changes neither counts nor memory
  m.dropout = o.boolean_or("dropout", false);
  m.experts = o.integer_or("experts", 0);
  m.experts_per_token = o.integer_or("experts_per_token", 0);
  read_extended_architecture(o, m);
  if (o.has("published_params")) o.positive("published_params");
  o.string_or("published_params_source", "");
  if (o.has("published_active_params")) o.positive("published_active_params");
  o.string_or("notes", "");
  o.finish();
  check_architecture(m, where);
  return m;
}

std::vector<std::pair<std::string, std::string>> model_summary_figures(const ModelSpec& m) {
  const ParamCounts c = count_params(m);
  std::string shape = fmt::format("L{} h{} a{}", m.layers, m.hidden, m.heads);
  if (m.kv_heads != m.heads) shape += fmt::format(" kv{}", m.kv_heads);
  if (m.is_moe()) shape += fmt::format(" {}x top-{}", m.experts, m.experts_per_token);
  if (m.shared_ffn_hidden > 0) shape += " +shared";
  if (m.is_mla()) shape += " MLA";
  shape += hybrid_mixers(m);
  return {{"params", fmt::format("{:.2f}B", c.total / 1e9)},
          {"active", fmt::format("{:.2f}B", c.active / 1e9)},
          {"shape", shape},
          {"mlp", fmt::format("{} {}", to_string(m.mlp), m.ffn_hidden)},
          {"vocab", std::to_string(m.vocab)},
          {"seq", std::to_string(m.seq_len)}};
}

}  // namespace shardplan
