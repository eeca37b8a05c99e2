// Parameter counting: every weight matrix, bias and norm of a decoder-only transformer, with
// multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 Sec. 2.1), shared and routed experts
// (DeepSeekMoE, arXiv:2401.06066 Sec. 3) and dense layers between MoE layers.
#include "shardplan/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"

namespace shardplan {
namespace {

double norm_params(const ModelSpec& m) {
  // LayerNorm has a weight and a bias; RMSNorm a weight only.
  return m.norm == NormKind::layernorm ? 2.0 * m.hidden : 1.0 * m.hidden;
}

double mlp_matrices(const ModelSpec& m) {
  return m.gated_mlp() ? 3.0 : 2.0;
}

// One MLP of width f split over t ranks: up (and gate) and down projections; the down
// projection's bias is replicated.
double one_mlp(const ModelSpec& m, double f, double t) {
  const double h = m.hidden;
  double p = mlp_matrices(m) * h * f / t;
  if (m.mlp_bias) p += (mlp_matrices(m) - 1.0) * f / t + h;
  return p;
}

// Attention weights on one of t tensor-parallel ranks. `split` is what tensor parallelism
// divides, `replicated` what every rank keeps, `matmul` the matrices a token multiplies by.
struct AttentionParams {
  double split = 0, replicated = 0, matmul = 0;
  double total() const { return split + replicated; }
};

AttentionParams attention_params(const ModelSpec& m, int tp) {
  AttentionParams a;
  const double h = m.hidden;
  const double t = tp;
  const double heads = m.heads;
  if (m.is_mla()) {
    // MLA (DeepSeek-V2 Eq. 9-14): queries through a rank-q_lora down projection and its norm
    // (or directly), keys and values through one joint down projection to kv_lora_rank plus the
    // shared rope key, up projections per head, output from heads x v_head_dim. Megatron-Core's
    // MLA keeps the down projections and their norms on every tensor-parallel rank.
    const double qk = m.qk_head_width();
    double q_down = 0, q_up = 0;
    if (m.mla.q_lora_rank > 0) {
      q_down = h * m.mla.q_lora_rank;
      a.replicated += q_down + m.mla.q_lora_rank;
      q_up = static_cast<double>(m.mla.q_lora_rank) * heads * qk;
    } else {
      q_up = h * heads * qk;
    }
    const double kv_down = h * (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);
    const double kv_up = static_cast<double>(m.mla.kv_lora_rank) * heads *
                         (m.mla.qk_nope_head_dim + m.mla.v_head_dim);
    const double out = heads * m.mla.v_head_dim * h;
    a.replicated += kv_down + m.mla.kv_lora_rank;
    a.split = (q_up + kv_up + out) / t;
    a.matmul = q_down + q_up + kv_down + kv_up + out;
    return a;
  }
  const double q = heads * m.head_dim / t;
  const double kv = local_kv_heads(m, tp) * m.head_dim;
  a.split = h * q + 2.0 * h * kv + q * h + (m.qkv_bias ? q + 2.0 * kv : 0);
  a.replicated = m.out_bias ? h : 0;
  a.matmul = h * heads * m.head_dim * 2.0 + 2.0 * h * m.kv_heads * m.head_dim;
  if (m.qk_norm) a.replicated += 2.0 * m.head_dim;  // one RMSNorm(head_dim) each for Q and K
  // gpt-oss (modeling_gpt_oss.py GptOssAttention.sinks): one learned logit per head.
  if (m.attention_sinks) a.split += heads / t;
  if (m.attention_output_gate) {
    // Qwen3-Next (modeling_qwen3_next.py Qwen3NextAttention): q_proj is heads x head_dim x 2
    // wide, the second half a sigmoid gate on the attention output.
    a.split += h * q;
    a.matmul += h * heads * m.head_dim;
  }
  return a;
}

// A gated DeltaNet mixer (modeling_qwen3_next.py Qwen3NextGatedDeltaNet) on one of t ranks:
// in_proj_qkvz (h -> 2 key_dim + 2 value_dim: q, k, v and the output gate z), in_proj_ba
// (h -> 2 value heads: the delta-rule step beta and the decay a), a depthwise causal conv1d over
// q, k, v (kernel taps each, no bias), dt_bias and A_log per value head, the gated RMSNorm of a
// value head (replicated) and out_proj (value_dim -> h). Heads split over tensor parallelism.
AttentionParams linear_attention_params(const ModelSpec& m, int tp) {
  AttentionParams a;
  const double h = m.hidden;
  const double t = tp;
  const double key_dim = static_cast<double>(m.linear.key_heads) * m.linear.key_head_dim;
  const double value_dim = static_cast<double>(m.linear.value_heads) * m.linear.value_head_dim;
  const double heads = m.linear.value_heads;
  const double in_proj = h * (2.0 * key_dim + 2.0 * value_dim) + h * 2.0 * heads;
  const double conv = (2.0 * key_dim + value_dim) * m.linear.conv_kernel;
  const double out = value_dim * h;
  a.split = (in_proj + conv + 2.0 * heads + out) / t;
  a.replicated = m.linear.value_head_dim;
  a.matmul = in_proj + out;
  return a;
}

// A Mamba-2 mixer (modeling_nemotron_h.py NemotronHMamba2Mixer; Megatron-Core's MambaMixer) on
// one of t ranks: in_proj (h -> 2 d_inner + 2 groups x state + heads: z, x, B, C and the step
// dt), a depthwise conv1d over x, B and C (kernel taps each, a bias with use_conv_bias), dt_bias,
// A_log and D per head, the gated RMSNorm over d_inner and out_proj (d_inner -> h), both
// projections with a bias under use_bias. Heads and groups split over tensor parallelism.
AttentionParams mamba_params(const ModelSpec& m, int tp) {
  AttentionParams a;
  const double h = m.hidden;
  const double t = tp;
  const double inner = static_cast<double>(m.mamba.heads) * m.mamba.head_dim;
  const double bc = 2.0 * m.mamba.groups * m.mamba.state;
  const double in_width = 2.0 * inner + bc + m.mamba.heads;
  const double conv_channels = inner + bc;
  double split = h * in_width + conv_channels * m.mamba.conv_kernel + 3.0 * m.mamba.heads + inner;
  if (m.mamba.conv_bias) split += conv_channels;
  if (m.mamba.proj_bias) split += in_width;
  a.split = (split + inner * h) / t;
  a.replicated = m.mamba.proj_bias ? h : 0;  // out_proj's bias, row-parallel
  a.matmul = h * in_width + inner * h;
  return a;
}

// A lightning attention mixer (transformers' modeling_minimax.py MiniMaxLightningAttention) on
// one of t ranks: qkv_proj (h -> 3 heads x head_dim), output_gate (h -> heads x head_dim), the
// RMSNorm over the heads' outputs and out_proj, none with a bias. Heads split over tensor
// parallelism.
AttentionParams lightning_params(const ModelSpec& m, int tp) {
  AttentionParams a;
  const double h = m.hidden;
  const double inner = static_cast<double>(m.heads) * m.head_dim;
  a.matmul = h * 3.0 * inner + h * inner + inner * h;
  a.split = (a.matmul + inner) / tp;
  return a;
}

AttentionParams mixer_params(const ModelSpec& m, MixerKind kind, int tp) {
  switch (kind) {
    case MixerKind::attention:
      return attention_params(m, tp);
    case MixerKind::gated_deltanet:
      return linear_attention_params(m, tp);
    case MixerKind::lightning:
      return lightning_params(m, tp);
    case MixerKind::mamba2:
      return mamba_params(m, tp);
    case MixerKind::none:
      break;
  }
  return {};
}

// Norms of one layer: a pattern's block has its pre-norm only.
double layer_norms(const ModelSpec& m) {
  return (m.has_block_pattern() ? 1.0 : m.norms_per_layer) * norm_params(m);
}

LayerParams layer_params(const ModelSpec& m, MixerKind mixer, FfnKind ffn) {
  LayerParams l;
  const AttentionParams a = mixer_params(m, mixer, 1);
  l.attention = a.total();
  l.norms = layer_norms(m);
  l.matmul_active = a.matmul;
  const double h = m.hidden;
  if (ffn == FfnKind::mlp) {
    const double f = m.is_moe() ? m.dense_mlp_width() : m.ffn_hidden;
    l.mlp = l.mlp_active = one_mlp(m, f, 1);
    l.matmul_active += mlp_matrices(m) * h * f;
  } else if (ffn == FfnKind::moe) {
    const double shared = m.shared_ffn_hidden > 0 ? one_mlp(m, m.shared_ffn_hidden, 1) : 0;
    l.mlp = m.experts * one_mlp(m, m.ffn_hidden, 1) + shared;
    l.mlp_active = m.experts_per_token * one_mlp(m, m.ffn_hidden, 1) + shared;
    l.router = h * m.experts + (m.router_bias || m.router_linear_bias ? m.experts : 0) + (m.shared_expert_gate ? h : 0);
    l.matmul_active += h * m.experts +
                       mlp_matrices(m) * h *
                           (static_cast<double>(m.experts_per_token) * m.ffn_hidden +
                            m.shared_ffn_hidden);
  }
  return l;
}

constexpr size_t kMixerKinds = 5;
constexpr size_t kFfnKinds = 3;

// How many layers of [first, first + n) are of each (mixer, FFN) kind. A model whose layers are
// all alike, or differ only in MoE (the common case, which the search prices millions of times),
// is counted without visiting each layer.
struct LayerKinds {
  std::array<int, kMixerKinds * kFfnKinds> n{};
  int& at(MixerKind mixer, FfnKind ffn) {
    return n[(static_cast<size_t>(mixer) * kFfnKinds) + static_cast<size_t>(ffn)];
  }
};

LayerKinds layer_kinds(const ModelSpec& m, int first, int n, int moe_layers) {
  LayerKinds k;
  if (!m.has_block_pattern() && !m.is_hybrid()) {
    k.at(MixerKind::attention, FfnKind::moe) = moe_layers;
    k.at(MixerKind::attention, FfnKind::mlp) = n - moe_layers;
    return k;
  }
  for (int i = first; i < first + n; ++i) ++k.at(m.mixer_of(i), m.ffn_of(i));
  return k;
}

template <typename F>
void for_each_kind(LayerKinds& k, F&& f) {
  for (size_t mixer = 0; mixer < kMixerKinds; ++mixer) {
    for (size_t ffn = 0; ffn < kFfnKinds; ++ffn) {
      const int n = k.at(static_cast<MixerKind>(mixer), static_cast<FfnKind>(ffn));
      if (n > 0) f(static_cast<MixerKind>(mixer), static_cast<FfnKind>(ffn), n);
    }
  }
}

}  // namespace

double local_kv_heads(const ModelSpec& model, int tp) {
  return std::max(1.0, static_cast<double>(model.kv_heads) / tp);
}

namespace {

int sliding_layers(const ModelSpec& m) {
  if (m.sliding_window <= 0) return 0;
  const int global = m.global_attention_every > 0 ? m.layers / m.global_attention_every : 0;
  return m.layers - global;
}

}  // namespace

double causal_attention_density(const ModelSpec& m, double s) {
  const int sliding = sliding_layers(m);
  const double w = std::min<double>(m.sliding_window, s);
  const double window_share = sliding > 0 ? (s * w - 0.5 * w * w) / (s * s) : 0.5;
  return ((m.layers - sliding) * 0.5 + sliding * window_share) / m.layers;
}

double attended_pairs(const ModelSpec& m, double s) {
  const int sliding = sliding_layers(m);
  const double w = std::min<double>(m.sliding_window, s);
  // Linear-attention and state-space layers keep a state instead of scoring query-key pairs
  // (their recurrence is counted with their ops, not here).
  const int softmax = m.mixer_layer_count(MixerKind::attention);
  return (softmax - sliding) * s * s + sliding * s * w;
}

int default_training_seq_len(const ModelSpec& m) {
  return std::min(m.seq_len, kDefaultSeqLenCap);
}

namespace {

// MoE layers among layers [a, b): counted in closed form from the dense first layers and the MoE
// step (every moe_layer_step-th layer after them), layer by layer for a block pattern.
int moe_layers_in(const ModelSpec& m, int a, int b) {
  if (!m.is_moe() || b <= a) return 0;
  if (m.has_block_pattern()) {
    int n = 0;
    for (int i = a; i < b; ++i) n += m.is_moe_layer(i) ? 1 : 0;
    return n;
  }
  const int dense = std::max(0, m.first_dense_layers), step = std::max(1, m.moe_layer_step);
  const auto before = [&](int x) { return x <= dense ? 0 : (x - dense) / step; };
  return before(b) - before(std::max(a, dense));
}

}  // namespace

void StageParamsMemo::hold(const ParallelPlan& plan) {
  const std::array<int, 8> pipeline = {plan.tp,
                                       plan.pp,
                                       plan.ep,
                                       plan.expert_tp(),
                                       plan.interleave,
                                       static_cast<int>(plan.schedule),
                                       plan.first_stage_layers,
                                       plan.last_stage_layers};
  if (pipeline != pipeline_) {
    pipeline_ = pipeline;
    stages_.clear();
    heaviest_moe_stage_ = -1;
  }
}

DeviceParams StageParamsMemo::of(const ParallelPlan& plan, int stage) {
  hold(plan);
  for (const auto& [s, params] : stages_)
    if (s == stage) return params;
  return stages_.emplace_back(stage, device_params(model_, plan, stage)).second;
}

int stage_moe_layers(const ModelSpec& m, const ParallelPlan& plan, int stage) {
  if (!m.is_moe()) return 0;
  int n = 0;
  for_each_stage_chunk(m.layers, plan, stage,
                       [&](int first, int count) { n += moe_layers_in(m, first, first + count); });
  return n;
}

namespace {

int find_heaviest_moe_stage(const ModelSpec& m, const ParallelPlan& p) {
  int best = 0, most = -1;
  for (int stage = 1; stage + 1 < p.pp; ++stage) {
    const int moe = stage_moe_layers(m, p, stage);
    if (moe > most) {
      most = moe;
      best = stage;
    }
  }
  return best;
}

}  // namespace

int heaviest_moe_stage(const ModelSpec& m, const ParallelPlan& p) {
  if (!m.has_architecture() || !m.is_moe() || p.pp <= 2) return 0;
  if (m.has_block_pattern())
    return m.moe_layer_count() == m.layers ? 0 : find_heaviest_moe_stage(m, p);
  if (m.first_dense_layers <= 0 && m.moe_layer_step == 1) return 0;  // every layer MoE
  return find_heaviest_moe_stage(m, p);
}

int StageParamsMemo::heaviest_moe_stage(const ParallelPlan& plan) {
  hold(plan);
  if (heaviest_moe_stage_ < 0) heaviest_moe_stage_ = shardplan::heaviest_moe_stage(model_, plan);
  return heaviest_moe_stage_;
}

DeviceParams device_params(const ModelSpec& m, const ParallelPlan& p, int stage,
                           StageParamsMemo* memo) {
  return memo ? memo->of(p, stage) : device_params(m, p, stage);
}

int heaviest_moe_stage(const ModelSpec& m, const ParallelPlan& p, StageParamsMemo* memo) {
  return memo ? memo->heaviest_moe_stage(p) : heaviest_moe_stage(m, p);
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  if (!m.has_architecture()) {
    c.total = c.active = m.params_only;
    return c;
  }
  const double h = m.hidden;
  c.moe_layers = m.is_moe() ? m.moe_layer_count() : m.layers;
  c.dense_layers = m.layers - c.moe_layers;
  c.layer = layer_params(m, MixerKind::attention, m.is_moe() ? FfnKind::moe : FfnKind::mlp);
  c.dense_layer = m.is_moe() ? layer_params(m, MixerKind::attention, FfnKind::mlp) : c.layer;
  c.linear_attention_layers = m.linear_attention_layer_count();
  if (c.linear_attention_layers > 0)
    c.linear_attention = mixer_params(m, m.linear.mixer, 1).total();
  c.mamba_layers = m.mixer_layer_count(MixerKind::mamba2);
  if (c.mamba_layers > 0) c.mamba = mamba_params(m, 1).total();

  // Every layer by its kind (mixer and FFN): sums of whole numbers, exact in doubles.
  LayerKinds kinds = layer_kinds(m, 0, m.layers, m.is_moe() ? m.moe_layer_count() : 0);
  double layers_total = 0, layers_active = 0;
  for_each_kind(kinds, [&](MixerKind mixer, FfnKind ffn, int n) {
    const LayerParams l = layer_params(m, mixer, ffn);
    layers_total += n * l.total();
    layers_active += n * l.active();
    c.layers_matmul_active += n * l.matmul_active;
    c.largest_layer = std::max(c.largest_layer, l.total());
  });
  c.embedding = static_cast<double>(m.vocab) * h;
  c.positions = m.positions == PositionKind::learned ? static_cast<double>(m.max_positions) * h : 0;
  c.lm_head = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * h;
  c.final_norm = norm_params(m);
  const double outside_layers = c.embedding + c.positions + c.lm_head + c.final_norm;
  c.total = layers_total + outside_layers;
  c.active = layers_active + outside_layers;
  // DeepSeek-V3 Sec. 2.2: each MTP module is a transformer layer (a MoE layer in V3), a 2h x h
  // projection and two RMSNorms (of the hidden state and the embedding), plus a final norm
  // before the shared output head.
  if (m.mtp_layers > 0) {
    c.mtp = m.mtp_layers * (c.layer.total() + 2.0 * h * h + 3.0 * norm_params(m));
  }
  return c;
}

DeviceParams device_params(const ModelSpec& m, const ParallelPlan& plan, int stage) {
  DeviceParams d;
  if (!m.has_architecture()) {
    // Without an architecture, tensor and pipeline parallelism split the count evenly.
    d.dense = m.params_only / (static_cast<double>(plan.tp) * plan.pp);
    d.largest_layer = d.dense;
    return d;
  }
  // The search calls this millions of times: only the pieces needed, no full count.
  SHARDPLAN_CHECK(stage >= 0 && stage < plan.pp, "stage out of range");
  const double t = plan.tp;
  const double h = m.hidden;
  const double norms = layer_norms(m);
  const double attention = attention_params(m, plan.tp).total();
  const double dense_mlp = one_mlp(m, m.dense_mlp_width(), t);
  const double dense_layer = attention + norms + dense_mlp;
  double moe_dense = 0, moe_experts = 0, router = 0;
  if (m.is_moe()) {
    // The router is replicated; shared experts are split by tp like a dense MLP; routed experts
    // are spread over ep ranks and each split over etp ranks (Megatron-Core MoE parallel folding).
    router = h * m.experts + (m.router_bias || m.router_linear_bias ? m.experts : 0) + (m.shared_expert_gate ? h : 0) +
             (m.shared_ffn_hidden > 0 ? one_mlp(m, m.shared_ffn_hidden, t) : 0);
    moe_dense = attention + norms + router;
    moe_experts = one_mlp(m, m.ffn_hidden, plan.expert_tp()) * m.experts / plan.ep;
  }

  const int layers_here = stage_layers(m.layers, plan, stage);
  if (!m.has_block_pattern() && !m.is_hybrid()) {
    const int moe_here = stage_moe_layers(m, plan, stage);
    d.dense = (layers_here - moe_here) * dense_layer + moe_here * moe_dense;
    d.experts = moe_here * moe_experts;
    d.largest_layer = moe_here > 0 ? std::max(dense_layer, moe_dense + moe_experts) : dense_layer;
  } else {
    // Layers of several kinds: each by its mixer and its FFN, over the stage's chunks.
    LayerKinds kinds;
    for_each_stage_chunk(m.layers, plan, stage, [&](int first, int count) {
      const LayerKinds chunk = layer_kinds(m, first, count, 0);
      for (size_t i = 0; i < kinds.n.size(); ++i) kinds.n[i] += chunk.n[i];
    });
    for_each_kind(kinds, [&](MixerKind mixer, FfnKind ffn, int n) {
      const double dense = norms + mixer_params(m, mixer, plan.tp).total() +
                           (ffn == FfnKind::mlp ? dense_mlp : ffn == FfnKind::moe ? router : 0);
      const double experts = ffn == FfnKind::moe ? moe_experts : 0;
      d.dense += n * dense;
      d.experts += n * experts;
      d.largest_layer = std::max(d.largest_layer, dense + experts);
    });
  }

  const bool first = stage == 0;
  const bool last = stage == head_stage(plan);
  // Vocabulary-parallel embedding and LM head (Megatron-LM VocabParallelEmbedding).
  const double table = static_cast<double>(m.vocab) * h / t;
  if (first)
    d.dense +=
        table +
        (m.positions == PositionKind::learned ? static_cast<double>(m.max_positions) * h : 0);
  if (last) {
    d.dense += norm_params(m);
    if (!m.tied_embeddings || !first) d.dense += table;  // a tied table elsewhere is a copy
    // The MTP modules beside the LM head they share (count_params: a `layer`-kind layer, the
    // column-parallel 2h x h projection and three norms each).
    if (m.mtp_layers > 0) {
      const bool moe = m.is_moe();
      d.dense += m.mtp_layers * ((moe ? moe_dense : dense_layer) + 2.0 * h * h / t +
                                 3.0 * norm_params(m));
      if (moe) d.experts += m.mtp_layers * moe_experts;
    }
  }
  return d;
}

std::string hybrid_mixers(const ModelSpec& m) {
  if (!m.has_block_pattern() && !m.is_hybrid()) return "";
  // Each mixer with the layers that run it, the recurrent ones first.
  std::string out;
  const std::pair<MixerKind, const char*> kinds[] = {{MixerKind::mamba2, "Mamba-2"},
                                                     {MixerKind::gated_deltanet, "DeltaNet"},
                                                     {MixerKind::lightning, "lightning"},
                                                     {MixerKind::attention, "attention"}};
  for (const auto& [kind, name] : kinds) {
    const int n = m.mixer_layer_count(kind);
    if (n > 0) out += fmt::format("{}{} {}", out.empty() ? " hybrid: " : ", ", n, name);
  }
  return out;
}

}  // namespace shardplan
