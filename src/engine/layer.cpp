// The op list of a decoder layer as Megatron-LM runs it, after Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models", Sec. 4.1): for GPT shapes
// with dropout and standard attention the saved tensors add up to s*b*h*(34 + 5*a*s/h) bytes
// per layer, 10 + 24/t (+ 5as/ht) with tensor parallelism and 34/t (+ 5as/ht) with sequence
// parallelism. Other widths (GQA, gated MLPs, MoE, flash attention) fall out of the same list.
#include "shardplan/layer.hpp"

#include <algorithm>

#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"

namespace shardplan {
namespace {

Op gemm(const char* name, double m, double n, double k, double batch, double act_bytes,
        double saved_bytes) {
  Op op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2.0 * m * n * k * batch;
  op.backward_flops = 2.0 * op.flops;  // dgrad and wgrad are each as large as the forward
  op.bytes = act_bytes * batch * (m * k + k * n + m * n);
  op.saved_bytes = saved_bytes;
  return op;
}

Op elementwise(const char* name, double bytes, double saved_bytes) {
  Op op;
  op.name = name;
  op.kind = OpKind::elementwise;
  op.bytes = bytes;
  op.saved_bytes = saved_bytes;
  return op;
}

using RM = RecomputeModule;

// Tags `op` for selective recompute: the modules that run it again, and those that free `freed`
// bytes of what it saves (all of it unless given).
Op recomputed(Op op, unsigned rerun_by, unsigned frees_by = 0, double freed = -1) {
  op.rerun_by = rerun_by;
  op.frees_by = frees_by;
  op.freeable_bytes = frees_by == 0 ? 0 : freed < 0 ? op.saved_bytes : freed;
  return op;
}

struct Shape {
  double s = 0;       // tokens of one sequence on this device (seq_len / cp)
  double s_kv = 0;    // keys each query attends to (the whole sequence)
  double b = 0;       // micro-batch
  double tokens = 0;  // s * b
  double h = 0;
  double heads = 0;   // local query heads
  double kv = 0;      // local key/value heads
  double d = 0;       // head dim
  double dqk = 0;     // query/key width per head (MLA: nope + rope)
  double dv = 0;      // value width per head
  double f = 0;       // local MLP width of a dense layer
  double fe = 0;      // local width of one routed expert (split by expert tp)
  double fs = 0;      // local width of the shared expert(s)
  double visits = 1;  // expert rows per token-visit: the capacity factor, 1 when dropless
  double r = 1;       // share of a sequence-region tensor this device holds (1/t with SP)
  double e = 2;       // bytes per activation element
  double mask = 1;    // bytes per dropout-mask element
  // Bytes per element of a linear layer's input saved for its weight gradient: e, or the
  // recipe's quantized copy where the framework saves one (averaged over the layers that run
  // the recipe and those kept in bf16), and what the attention output projection keeps beside
  // the attention kernel's own 16-bit output (a quantized copy under delayed scaling).
  double q = 2;
  double proj_copy = 0;
};

// Transformer Engine's linears save their quantized input (the column-wise copy wgrad reads);
// torchao's save the 16-bit one (framework.hpp saves_quantized_inputs).
void set_saved_input_bytes(Shape& x, const ModelSpec& m, const TrainingSpec& tr) {
  const PrecisionRecipe& r = tr.recipe;
  x.q = x.e;
  x.proj_copy = 0;
  if (!r.low_precision() || r.saved_input_bytes <= 0 ||
      !tr.framework.pricing.saves_quantized_inputs)
    return;
  const double share = r.low_precision_layer_share(m.layers);
  x.q = x.e + share * (r.saved_input_bytes - x.e);
  if (r.attention_output_copy) x.proj_copy = share * r.saved_input_bytes;
}

Shape make_shape(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p) {
  Shape x;
  x.s = static_cast<double>(tr.seq_len) / p.cp;
  x.s_kv = tr.seq_len;
  x.b = p.micro_batch;
  x.tokens = x.s * x.b;
  x.h = m.hidden;
  x.heads = static_cast<double>(m.heads) / p.tp;
  x.kv = local_kv_heads(m, p.tp);
  x.d = m.head_dim;
  x.dqk = m.qk_head_width();
  x.dv = m.v_head_width();
  if (m.is_mla()) x.kv = x.heads;  // MLA's up projections give every head its own K and V
  x.f = static_cast<double>(m.is_moe() ? m.dense_mlp_width() : m.ffn_hidden) / p.tp;
  x.fe = static_cast<double>(m.ffn_hidden) / p.expert_tp();
  x.fs = static_cast<double>(m.shared_ffn_hidden) / p.tp;
  // Padded to capacity, every expert takes c x its even share; dropless, the busiest expert
  // rank takes the max-load factor x its share, and the others wait for it in the combine.
  x.visits = tr.moe_capacity_factor > 0 ? tr.moe_capacity_factor : moe_max_load(tr);
  x.r = p.sequence_parallel ? 1.0 / p.tp : 1.0;
  x.e = tr.recipe.activation_bytes;
  set_saved_input_bytes(x, m, tr);
  return x;
}

// Norm, then (residual + dropout) at the end: the two sequence-region ends of each block.
Op norm_op(const char* name, const Shape& x) {
  const double n = x.tokens * x.h * x.r;
  return elementwise(name, 2.0 * n * x.e, n * x.e);  // saves its input
}

Op residual_op(const char* name, const Shape& x, bool dropout) {
  const double n = x.tokens * x.h * x.r;
  // Fused bias + dropout + residual add: read two tensors, write one (and a 1-byte mask).
  return elementwise(name, n * (3.0 * x.e + (dropout ? x.mask : 0)), dropout ? n * x.mask : 0);
}

// MLA's projections (DeepSeek-V2 Sec. 2.1): replicated down projections to the latent ranks,
// split up projections per head. Each GEMM saves its input for the weight gradient.
void add_mla_projections(Block& blk, const ModelSpec& m, const Shape& x) {
  const double in = x.tokens * x.h * x.r * x.q;
  const double kv_rank = m.mla.kv_lora_rank;
  if (m.mla.q_lora_rank > 0) {
    const double q_rank = m.mla.q_lora_rank;
    // The normed input the first GEMM saves goes with the norm's output (layernorm module).
    blk.ops.push_back(recomputed(gemm("q down projection", x.tokens, q_rank, x.h, 1, x.e, in), 0,
                                 bit(RM::layernorm)));
    blk.ops.push_back(recomputed(gemm("q up projection", x.tokens, x.heads * x.dqk, q_rank, 1,
                                      x.e, x.tokens * q_rank * x.q),
                                 bit(RM::mla_up_proj)));
  } else {
    blk.ops.push_back(recomputed(gemm("q projection", x.tokens, x.heads * x.dqk, x.h, 1, x.e, in),
                                 0, bit(RM::layernorm)));
  }
  // Reads the same normed input the query's first GEMM saved: nothing more to keep.
  blk.ops.push_back(
      gemm("kv down projection", x.tokens, kv_rank + m.mla.qk_rope_head_dim, x.h, 1, x.e, 0));
  blk.ops.push_back(
      recomputed(gemm("kv up projection", x.tokens, x.heads * (m.mla.qk_nope_head_dim + x.dv),
                      kv_rank, 1, x.e, x.tokens * kv_rank * x.q),
                 bit(RM::mla_up_proj)));
}

void add_attention(Block& blk, const ModelSpec& m, const TrainingSpec& tr, const Shape& x) {
  const double q_elems = x.tokens * x.heads * x.dqk;
  const double k_elems = x.tokens * x.kv * x.dqk;
  const double v_elems = x.tokens * x.kv * x.dv;
  const double out_elems = x.tokens * x.heads * x.dv;
  if (m.is_mla()) {
    add_mla_projections(blk, m, x);
  } else {
    // Qwen3-Next's q_proj also yields the output gate: one more heads x head_dim block.
    const double q_blocks = m.attention_output_gate ? 2.0 : 1.0;
    blk.ops.push_back(
        recomputed(gemm("qkv projection", x.tokens, (q_blocks * x.heads + 2.0 * x.kv) * x.d, x.h,
                        1, x.e, x.tokens * x.h * x.r * x.q),
                   0, bit(RM::layernorm)));
  }
  if (m.qk_norm) {
    blk.ops.push_back(
        elementwise("qk norm", 2.0 * (q_elems + k_elems) * x.e, (q_elems + k_elems) * x.e));
  }
  if (m.positions == PositionKind::rotary) {
    // MLA applies RoPE as part of its up projections (Megatron-Core's mla_up_proj module).
    blk.ops.push_back(
        recomputed(elementwise("rotary embedding", 2.0 * (q_elems + k_elems) * x.e, 0),
                   m.is_mla() ? bit(RM::mla_up_proj) : 0));
  }
  // Megatron-Core checkpoints the core attention, fused or not (TransformerConfig warns that a
  // fused kernel gains nothing by it); torchtitan's op policy keeps SDPA's output instead.
  const unsigned core = tr.framework.pricing.selective ==
                                FrameworkPricing::Selective::attention_core
                            ? bit(RM::core_attn)
                            : 0u;
  // Discarding the up projections' outputs frees the Q, K and V the attention saved.
  const unsigned up_proj = m.is_mla() ? bit(RM::mla_up_proj) : 0u;
  const double score_elems = x.b * x.heads * x.s * x.s_kv;
  if (tr.attention == AttentionKind::flash) {
    // FlashAttention-2 (Dao 2023): causal masking skips half the score tiles (a sliding window
    // more); backward does 5 matmuls against the forward's 2 (2.5x). It saves Q, K, V, the
    // output and the log-sum-exp; the output is counted as the output projection's input below.
    Op op;
    op.name = "flash attention";
    op.kind = OpKind::attention;
    op.flops =
        causal_attention_density(m, x.s_kv) * 2.0 * x.b * x.heads * x.s * x.s_kv * (x.dqk + x.dv);
    op.backward_flops = 2.5 * op.flops;
    // What its efficiency depends on (compute.cpp attention_efficiency_at): the causal
    // sequence length of one kernel call with the same keys per query (a sliding window's
    // layers attend fewer), over the ring's chunks under context parallelism (each ring step
    // is its own kernel over s / cp queries and keys), and the head dim.
    op.n = std::min(2.0 * causal_attention_density(m, x.s_kv) * x.s_kv, x.s);
    op.k = x.dqk;
    op.saved_bytes = (q_elems + k_elems + v_elems) * x.e + x.tokens * x.heads * 4.0;
    blk.ops.push_back(recomputed(op, core, up_proj, (q_elems + k_elems + v_elems) * x.e));
  } else {
    // Megatron-LM's unfused core attention: QK^T, fused scale-mask-softmax, dropout, AV.
    // The core's own saved tensors go with its checkpoint (Korthikanti et al. 2022 Sec. 5).
    const unsigned attn = bit(RM::core_attn);
    blk.ops.push_back(recomputed(gemm("attention scores", x.s, x.s_kv, x.dqk, x.b * x.heads, x.e,
                                      (q_elems + k_elems) * x.e),
                                 attn, up_proj));
    blk.ops.push_back(recomputed(
        elementwise("softmax", 2.0 * score_elems * x.e, score_elems * x.e), attn, attn));
    if (m.dropout) {
      blk.ops.push_back(recomputed(elementwise("attention dropout",
                                               score_elems * (2.0 * x.e + x.mask),
                                               score_elems * (x.mask + x.e)),
                                   attn, attn));
    }
    blk.ops.push_back(recomputed(
        gemm("attention over values", x.s, x.dv, x.s_kv, x.b * x.heads, x.e, v_elems * x.e), attn,
        up_proj));
  }
  if (m.attention_output_gate) {
    // sigmoid(gate) * attention output: keeps the gate and the ungated output for backward.
    blk.ops.push_back(
        elementwise("attention output gate", 3.0 * out_elems * x.e, 2.0 * out_elems * x.e));
  }
  // With flash attention the projection's 16-bit input is the output the kernel saved; without
  // it the projection alone keeps it, quantized where the recipe keeps a copy.
  const double proj_saved = tr.attention == AttentionKind::flash
                                ? out_elems * (x.e + x.proj_copy)
                                : out_elems * (x.proj_copy > 0 ? x.q : x.e);
  blk.ops.push_back(
      gemm("output projection", x.tokens, x.h, x.heads * x.dv, 1, x.e, proj_saved));
}

// Chunk length of the chunked gated delta rule (flash-linear-attention's chunk_gated_delta_rule,
// the kernel Qwen3-Next's modeling code calls; Yang et al. 2024 Sec. 3.3 chunkwise form).
constexpr double kDeltaRuleChunk = 64;

// A gated DeltaNet mixer (modeling_qwen3_next.py Qwen3NextGatedDeltaNet) on this device's share
// of the value heads: input projections, the causal conv1d + SiLU over q, k, v, the chunked
// delta rule, the gated RMSNorm and the output projection.
void add_gated_deltanet(Block& blk, const ModelSpec& m, const ParallelPlan& p, const Shape& x) {
  const double t = p.tp;
  const double hv = m.linear.value_heads / t;
  const double key_dim = static_cast<double>(m.linear.key_heads) * m.linear.key_head_dim / t;
  const double value_dim = hv * m.linear.value_head_dim;
  const double conv_dim = 2.0 * key_dim + value_dim;
  const double dk = m.linear.key_head_dim, dv = m.linear.value_head_dim;
  blk.ops.push_back(recomputed(gemm("qkvz projection", x.tokens, 2.0 * key_dim + 2.0 * value_dim,
                                    x.h, 1, x.e, x.tokens * x.h * x.r * x.q),
                               0, bit(RM::layernorm)));
  blk.ops.push_back(gemm("beta/decay projection", x.tokens, 2.0 * hv, x.h, 1, x.e, 0));
  // Depthwise conv of `kernel` taps, then SiLU: keeps its input and its output.
  const double conv_elems = x.tokens * conv_dim;
  blk.ops.push_back(elementwise("short convolution", 2.0 * conv_elems * x.e, conv_elems * x.e));
  blk.ops.push_back(elementwise("conv silu", 2.0 * conv_elems * x.e, conv_elems * x.e));
  // The delta rule per value head and token: the state (dk x dv) read for the output, and the
  // rank-1 correction and decay written back (3 dk dv multiply-adds), plus the intra-chunk
  // causal products of the chunkwise form (C/2 (dk + dv) each). Backward is about twice that.
  Op rule;
  rule.name = "gated delta rule";
  rule.kind = OpKind::attention;
  rule.flops = 2.0 * x.tokens * hv * (3.0 * dk * dv + 0.5 * kDeltaRuleChunk * (dk + dv));
  rule.backward_flops = 2.0 * rule.flops;
  // q, k, v are the conv output saved above; the kernel adds the fp32 decay and beta per head.
  rule.saved_bytes = x.tokens * hv * 2.0 * 4.0;
  blk.ops.push_back(rule);
  const double out_elems = x.tokens * value_dim;
  // RMSNorm of each head's output times SiLU(z): keeps the output and z.
  blk.ops.push_back(
      elementwise("gated norm", 3.0 * out_elems * x.e, 2.0 * out_elems * x.e));
  blk.ops.push_back(
      gemm("linear attention out projection", x.tokens, x.h, value_dim, 1, x.e, out_elems * x.q));
}

// Scales ops [from, end) to `share` of the layers: a hybrid's one layer description is the
// average of its mixers, so sums over layers (time, activations) come out right.
void scale_ops(Block& blk, size_t from, double share) {
  for (size_t i = from; i < blk.ops.size(); ++i) {
    Op& op = blk.ops[i];
    op.batch *= share;
    op.flops *= share;
    op.bytes *= share;
    op.saved_bytes *= share;
    op.freeable_bytes *= share;
    op.backward_flops *= share;
  }
}

// A Mamba-2 mixer (Dao & Gu 2024, arXiv:2405.21060; Megatron-Core's MambaMixer) on this device's
// share of the heads and groups: the input projection to z, x, B, C and dt, the causal conv1d +
// SiLU over x, B and C, the chunked SSD scan, the gated RMSNorm and the output projection.
void add_mamba2(Block& blk, const ModelSpec& m, const ParallelPlan& p, const Shape& x) {
  const double t = p.tp;
  const double heads = m.mamba.heads / t;
  const double groups = m.mamba.groups / t;
  const double hd = m.mamba.head_dim, n = m.mamba.state, q = m.mamba.chunk;
  const double inner = heads * hd;
  const double bc = 2.0 * groups * n;
  blk.ops.push_back(recomputed(gemm("mamba in projection", x.tokens, 2.0 * inner + bc + heads, x.h,
                                    1, x.e, x.tokens * x.h * x.r * x.q),
                               0, bit(RM::layernorm)));
  // causal_conv1d keeps its input; the scan keeps its output (x, B and C).
  const double conv_elems = x.tokens * (inner + bc);
  blk.ops.push_back(elementwise("short convolution", 2.0 * conv_elems * x.e, conv_elems * x.e));
  blk.ops.push_back(elementwise("conv silu", 2.0 * conv_elems * x.e, conv_elems * x.e));
  // The SSD algorithm per chunk of q tokens (Sec. 6): C B^T within the chunk (q n per token and
  // group), its product with x (q hd per token and head), the chunk's state B^T x and the
  // output from the carried state (n hd each per token and head). Backward is about twice that.
  Op scan;
  scan.name = "ssd scan";
  scan.kind = OpKind::attention;
  scan.flops = 2.0 * x.tokens * (heads * (2.0 * n * hd + q * hd) + groups * q * n);
  scan.backward_flops = 2.0 * scan.flops;
  // mamba_chunk_scan_combined saves dt, its fp32 cumulative decay and its output.
  const double out_elems = x.tokens * inner;
  scan.saved_bytes = x.tokens * heads * (x.e + 4.0) + out_elems * x.e;
  blk.ops.push_back(scan);
  // What the scan's kernels move besides (mamba_ssm ssd_combined.py
  // _mamba_chunk_scan_combined_fwd): each chunk's hd x n state per head written in fp32
  // (_chunk_state_fwd), read and written back in 16 bits (_state_passing_fwd) and read
  // (_chunk_scan_fwd), 12 bytes an element; and C B^T per group, q x q per chunk in fp32,
  // written and read.
  const double states = x.tokens / q * heads * hd * n;
  blk.ops.push_back(
      elementwise("ssd chunk states", 12.0 * states + 8.0 * x.tokens * groups * q, 0));
  // RMSNorm of the output times SiLU(z) (norm_before_gate false): keeps z besides.
  blk.ops.push_back(elementwise("gated norm", 3.0 * out_elems * x.e, out_elems * x.e));
  blk.ops.push_back(
      gemm("mamba out projection", x.tokens, x.h, inner, 1, x.e, out_elems * x.q));
}

// Lightning attention (MiniMax-01, arXiv:2501.08313 Sec. 2.2; transformers' modeling_minimax.py
// MiniMaxLightningAttention) on this device's share of the heads: the qkv projection and its SiLU,
// the blockwise linear attention, the RMSNorm of the heads' outputs, the sigmoid output gate
// and the output projection.
void add_lightning(Block& blk, const ModelSpec& m, const ParallelPlan& p, const Shape& x) {
  const double heads = static_cast<double>(m.heads) / p.tp;
  const double d = m.head_dim, block = m.linear.lightning_block;
  const double inner = heads * d;
  const double normed = x.tokens * x.h * x.r * x.q;
  blk.ops.push_back(recomputed(gemm("qkv projection", x.tokens, 3.0 * inner, x.h, 1, x.e, normed),
                               0, bit(RM::layernorm)));
  const double qkv = 3.0 * x.tokens * inner;
  blk.ops.push_back(elementwise("qkv silu", 2.0 * qkv * x.e, qkv * x.e));
  // Per token and head: Q K^T and its product with V inside the token's block (block x d
  // each), Q times the carried d x d state, and K^T V added to it (d x d). Backward is about
  // twice that.
  Op op;
  op.name = "lightning attention";
  op.kind = OpKind::attention;
  op.flops = 2.0 * x.tokens * heads * (2.0 * block * d + 2.0 * d * d);
  op.backward_flops = 2.0 * op.flops;
  blk.ops.push_back(op);
  const double out_elems = x.tokens * inner;
  blk.ops.push_back(elementwise("lightning norm", 2.0 * out_elems * x.e, out_elems * x.e));
  // The gate reads the normed layer input the qkv projection saved.
  blk.ops.push_back(gemm("output gate projection", x.tokens, inner, x.h, 1, x.e, 0));
  blk.ops.push_back(
      elementwise("sigmoid output gate", 3.0 * out_elems * x.e, 2.0 * out_elems * x.e));
  blk.ops.push_back(gemm("lightning out projection", x.tokens, x.h, inner, 1, x.e,
                         out_elems * x.q));
}

void add_mixer_ops(Block& blk, MixerKind kind, const ModelSpec& m, const TrainingSpec& tr,
                   const ParallelPlan& p, const Shape& x) {
  switch (kind) {
    case MixerKind::attention:
      add_attention(blk, m, tr, x);
      break;
    case MixerKind::gated_deltanet:
      add_gated_deltanet(blk, m, p, x);
      break;
    case MixerKind::lightning:
      add_lightning(blk, m, p, x);
      break;
    case MixerKind::mamba2:
      add_mamba2(blk, m, p, x);
      break;
    case MixerKind::none:
      break;
  }
}

// The token mixer of a layer between its input norm and its residual: softmax attention, or
// for a hybrid both mixers, each weighted by the share of layers that run it.
void add_mixer(Block& blk, const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
               const Shape& x) {
  blk.ops.push_back(recomputed(norm_op("input norm", x), bit(RM::layernorm)));
  const size_t first = blk.ops.size();
  add_attention(blk, m, tr, x);
  if (m.is_hybrid()) {
    const double linear = static_cast<double>(m.linear_attention_layer_count()) / m.layers;
    scale_ops(blk, first, 1.0 - linear);
    const size_t second = blk.ops.size();
    add_mixer_ops(blk, m.linear.mixer, m, tr, p, x);
    scale_ops(blk, second, linear);
  }
  blk.ops.push_back(residual_op("attention residual", x, m.dropout));
}

// Which recompute modules run an MLP again and free what its ops save (RecomputeModule).
struct MlpModules {
  unsigned rerun = 0;        // the whole MLP (a checkpointed submodule)
  unsigned act_rerun = 0;    // the activation alone besides (moe_act)
  unsigned input_frees = 0;  // the up projection's saved input
  unsigned act_frees = 0;    // the activation's saved inputs
  unsigned down_frees = 0;   // the down projection's saved input (the activation's output)
};

// Up projection, activation and down projection of `rows` tokens through `groups` MLPs of
// local width f; `saved_input` is what the up projection keeps (0 when a copy already holds it).
void add_mlp_gemms(Block& blk, const ModelSpec& m, const Shape& x, double rows, double groups,
                   double f, double saved_input, const MlpModules& r) {
  const double in_width = m.gated_mlp() ? 2.0 * f : f;
  blk.ops.push_back(recomputed(
      gemm("mlp up projection", rows, in_width, x.h, groups, x.e, saved_input), r.rerun,
      r.input_frees));
  const double act = rows * groups * f;
  if (m.gated_mlp()) {
    // Fused SwiGLU/GeGLU (Megatron bias_swiglu): keeps gate and up outputs, writes the product.
    blk.ops.push_back(recomputed(elementwise("gated activation", 3.0 * act * x.e, 2.0 * act * x.e),
                                 r.rerun | r.act_rerun, r.act_frees));
  } else {
    // GeLU or squared ReLU (Nemotron): one input saved, one output written.
    const char* name = m.mlp == MlpKind::squared_relu ? "squared relu" : "gelu";
    blk.ops.push_back(recomputed(elementwise(name, 2.0 * act * x.e, act * x.e),
                                 r.rerun | r.act_rerun, r.act_frees));
  }
  blk.ops.push_back(recomputed(gemm("mlp down projection", rows, x.h, f, groups, x.e, act * x.q),
                               r.rerun, r.down_frees));
}

void add_mlp(Block& blk, const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
             const Shape& x, bool moe) {
  blk.ops.push_back(recomputed(norm_op("post-attention norm", x), bit(RM::layernorm)));
  const double layer_input = x.tokens * x.h * x.r * x.q;  // the normed input the up GEMM saves
  if (!moe) {
    // Megatron-Core's mlp module checkpoints the dense MLP: its input stays, its insides go.
    const unsigned mlp = bit(RM::mlp);
    add_mlp_gemms(blk, m, x, x.tokens, 1, x.f, layer_input,
                  {.rerun = mlp, .input_frees = bit(RM::layernorm), .act_frees = mlp,
                   .down_frees = mlp});
    blk.ops.push_back(residual_op("mlp residual", x, m.dropout));
    return;
  }
  // Tokens this device routes: its sequence-parallel share of the micro-batch. Megatron-Core
  // refuses an MoE layer under tensor parallelism without sequence parallelism (moe_layer.py),
  // and torchtitan's ReordererSequenceParallel splits the tokens over TP ranks the same way, so
  // each TP rank routes 1/tp of them rather than all of them again.
  const double routed = x.tokens * x.r;
  // Every routed token visits top-k experts; the all-to-all brings each device as many
  // token-visits as it sent (balanced routing, or the capacity each expert is padded to).
  const double sent = routed * m.experts_per_token * x.visits;
  // An expert-TP group all-gathers its members' received tokens and runs all of them through its
  // 1/etp of each expert (token_dispatcher.py: A2A over EP, then AG over expert TP). Without
  // sequence parallelism the TP ranks inside that group already hold the same tokens.
  const int etp = p.expert_tp();
  const double gather = p.sequence_parallel || p.tp == 1
                            ? etp
                            : std::max(1.0, static_cast<double>(etp) / p.tp);
  const double visits = sent * gather;
  const double local_experts = static_cast<double>(m.experts) / p.ep;
  // The router (a 16-bit GEMM under every recipe) keeps the normed input for its weight
  // gradient, and its fp32 probabilities. The moe module checkpoints the whole MoE layer (the
  // normed input stays; its all-to-alls run again too: step_time.cpp).
  const unsigned moe_layer = bit(RM::moe);
  const double normed = routed * x.h * x.e;
  const double probs = routed * m.experts * 4.0;
  blk.ops.push_back(recomputed(gemm("router", routed, m.experts, x.h, 1, x.e, normed), moe_layer,
                               bit(RM::layernorm)));
  // Scores and top-k over the fp32 logits: reads them, writes the probabilities it keeps.
  blk.ops.push_back(recomputed(elementwise("router probabilities", 2.0 * probs, probs),
                               moe_layer, moe_layer));
  // Permuted copy of the tokens for the experts, and the unpermute that weights and sums them.
  // The experts' up projection saves the permuted tokens (as its quantized copy, if any).
  blk.ops.push_back(recomputed(
      elementwise("token dispatch", 2.0 * sent * x.h * x.e, visits * x.h * x.q), moe_layer,
      moe_layer));
  // Weighting each expert output by its probability in the combine keeps those outputs for the
  // probabilities' gradient; Megatron-Core weights inside the activation instead, which keeps
  // the probabilities beside its input (FrameworkPricing::moe_probs_in_activation).
  const bool weighted_activation = tr.framework.pricing.moe_probs_in_activation;
  blk.ops.push_back(recomputed(
      elementwise("token combine", 3.0 * sent * x.h * x.e,
                  weighted_activation ? 0.0 : visits * x.h * x.e),
      moe_layer, moe_layer));
  blk.expert_tokens = routed;
  blk.expert_visits = sent;
  blk.expert_gather = gather;
  const size_t experts_from = blk.ops.size();
  // moe_act discards the expert activation's output, the down projection's saved input.
  add_mlp_gemms(blk, m, x, visits / local_experts, local_experts, x.fe, 0,
                {.rerun = moe_layer, .act_rerun = bit(RM::moe_act), .act_frees = moe_layer,
                 .down_frees = moe_layer | bit(RM::moe_act)});
  for (size_t i = experts_from; i < blk.ops.size(); ++i)
    blk.ops[i].grouped = blk.ops[i].kind == OpKind::gemm;
  if (weighted_activation) {
    Op& act = blk.ops[experts_from + 1];  // add_mlp_gemms: up projection, activation, down
    act.saved_bytes += visits * 4.0;      // the fp32 probability of each token-visit
    act.freeable_bytes = act.saved_bytes;
  }
  // Shared experts (DeepSeekMoE) see every token, as a dense MLP split by tensor parallelism.
  // Their up projection reads the router's input: a copy of its own only when quantized.
  const double shared_input = x.q != x.e ? layer_input : 0;
  const unsigned shared = moe_layer | bit(RM::shared_experts);
  if (m.shared_ffn_hidden > 0) {
    add_mlp_gemms(blk, m, x, x.tokens, 1, x.fs, shared_input,
                  {.rerun = shared, .input_frees = shared | bit(RM::layernorm),
                   .act_frees = shared, .down_frees = shared});
  }
  blk.ops.push_back(residual_op("mlp residual", x, m.dropout));
}

// A block-pattern layer (ModelSpec::block_pattern): the MoE blocks ('E') when `moe`, otherwise
// the average of the other blocks, each block its norm, its mixer or MLP and its residual,
// weighted by its share of those layers.
void add_pattern_blocks(Block& blk, const ModelSpec& m, const TrainingSpec& tr,
                        const ParallelPlan& p, const Shape& x, bool moe) {
  if (moe) {
    add_mlp(blk, m, tr, p, x, true);
    return;
  }
  const double mixers[] = {static_cast<double>(m.mixer_layer_count(MixerKind::attention)),
                           static_cast<double>(m.mixer_layer_count(MixerKind::mamba2))};
  const double mlps = static_cast<double>(m.layers - m.moe_layer_count()) - mixers[0] - mixers[1];
  const double blocks = mixers[0] + mixers[1] + mlps;
  const MixerKind kinds[] = {MixerKind::attention, MixerKind::mamba2};
  for (int k = 0; k < 2; ++k) {
    if (mixers[k] <= 0) continue;
    const size_t from = blk.ops.size();
    blk.ops.push_back(recomputed(norm_op("input norm", x), bit(RM::layernorm)));
    add_mixer_ops(blk, kinds[k], m, tr, p, x);
    blk.ops.push_back(residual_op("mixer residual", x, m.dropout));
    scale_ops(blk, from, mixers[k] / blocks);
  }
  if (mlps > 0) {
    const size_t from = blk.ops.size();
    add_mlp(blk, m, tr, p, x, false);
    scale_ops(blk, from, mlps / blocks);
  }
}

// Resolves the ops' recompute tags for the plan's selective recompute (Op::selective).
void resolve_selective(Block& block, unsigned modules) {
  for (Op& op : block.ops) {
    op.selective = (op.rerun_by & modules) != 0;
    op.selective_freed_bytes = (op.frees_by & modules) != 0 ? op.freeable_bytes : 0;
  }
}

}  // namespace

MicroBatchWork describe_micro_batch(const ModelSpec& m, const TrainingSpec& tr,
                                    const ParallelPlan& p) {
  SHARDPLAN_CHECK(m.has_architecture(), "describe_micro_batch needs an architecture");
  const Shape x = make_shape(m, tr, p);
  MicroBatchWork w;
  w.tokens = x.tokens;

  // A MoE model with dense layers (DeepSeek's first three, Llama 4 Maverick's every other one)
  // describes both kinds; `layer` is the MoE one.
  w.moe_layers = m.is_moe() ? m.moe_layer_count() : 0;
  w.dense_layers = m.layers - w.moe_layers;
  auto describe_layer = [&](Block& layer, bool moe) {
    if (m.has_block_pattern()) {
      add_pattern_blocks(layer, m, tr, p, x, moe);
    } else {
      add_mixer(layer, m, tr, p, x);
      add_mlp(layer, m, tr, p, x, moe);
    }
    layer.input_bytes = x.tokens * x.h * x.r * x.e;
    if (p.tp > 1) {
      // A mixer and an MLP each end in a row-parallel projection (a pattern's block is one).
      const int ends = m.has_block_pattern() ? 1 : 2;
      layer.tp.bytes = x.tokens * x.h * x.e;
      if (p.sequence_parallel) {
        layer.tp.gathers = ends;   // before QKV and before the MLP
        layer.tp.scatters = ends;  // after the output projection and after the MLP
        layer.tp.backward_regathers = ends;
      } else {
        layer.tp.all_reduces = ends;  // after the output projection and the MLP (Megatron's g)
      }
    }
  };
  describe_layer(w.layer, m.is_moe());
  if (m.is_moe() && w.dense_layers > 0) {
    describe_layer(w.dense_layer, false);
  } else {
    w.dense_layer = w.layer;
  }

  Block& emb = w.embedding;
  const double seq_region = x.tokens * x.h * x.r;
  emb.ops.push_back(elementwise("embedding lookup", 2.0 * x.tokens * x.h * x.e, 0));
  if (m.dropout) {
    emb.ops.push_back(
        elementwise("embedding dropout", seq_region * (2.0 * x.e + x.mask), seq_region * x.mask));
  }
  if (p.tp > 1) {
    // Vocabulary-parallel lookup: partial rows are summed (reduce-scattered with SP).
    emb.tp.bytes = x.tokens * x.h * x.e;
    if (p.sequence_parallel) {
      emb.tp.scatters = 1;
    } else {
      emb.tp.all_reduces = 1;
    }
  }

  Block& head = w.head;
  const double vocab_local = static_cast<double>(m.vocab) / p.tp;
  head.ops.push_back(norm_op("final norm", x));
  head.ops.push_back(gemm("lm head", x.tokens, vocab_local, x.h, 1, x.e, x.tokens * x.h * x.e));
  // Cross entropy in fp32: reads the logits, keeps the fp32 softmax. Vocabulary-parallel, each
  // rank over its own share; a full-vocabulary loss gathers the logits first and every TP rank
  // runs it over the whole vocabulary.
  const bool gathered = gathers_vocabulary(tr, p);
  const double logits = x.tokens * (gathered ? static_cast<double>(m.vocab) : vocab_local);
  if (gathered) w.loss_gather_bytes = logits * x.e;
  head.ops.push_back(elementwise("cross entropy", logits * (x.e + 2.0 * 4.0), logits * 4.0));
  w.loss_saved_bytes = logits * 4.0;
  if (p.tp > 1 && p.sequence_parallel) {
    head.tp.bytes = x.tokens * x.h * x.e;
    head.tp.gathers = 1;
  }

  // DeepSeek-V3 Sec. 2.2 (Eq. 21-22): each MTP module normalises the previous depth's hidden
  // state and the next token's embedding (the shared table: a lookup, no GEMM), projects their
  // concatenation 2h -> h, runs one transformer layer (described as `layer`) and the shared
  // output head and loss. Megatron-Core's projection is column-parallel (multi_token_prediction.py
  // eh_proj) and the module sits on the LM head's stage (its layout's "m" before "L").
  w.mtp_layers = m.mtp_layers;
  if (m.mtp_layers > 0) {
    Block& mtp = w.mtp;
    mtp.ops.push_back(norm_op("mtp hidden norm", x));
    mtp.ops.push_back(norm_op("mtp embedding norm", x));
    mtp.ops.push_back(gemm("mtp projection", x.tokens, x.h / p.tp, 2.0 * x.h, 1, x.e,
                           2.0 * x.tokens * x.h * x.e));
    for (const Op& op : head.ops) mtp.ops.push_back(op);
    mtp.tp = head.tp;
  }
  // What selective recompute would redo, whichever recompute the plan runs: the memory model
  // prices every policy from one description (memory.cpp activation_profile).
  const unsigned modules =
      p.recompute_modules != 0 ? p.recompute_modules : bit(RecomputeModule::core_attn);
  for (Block* b : {&w.layer, &w.dense_layer, &w.embedding, &w.head, &w.mtp})
    resolve_selective(*b, modules);
  return w;
}

double full_saved_bytes(const Block& block) {
  double total = 0;
  for (const Op& op : block.ops) total += op.saved_bytes;
  return total;
}

double saved_activation_bytes(const Block& block, Recompute recompute) {
  if (recompute == Recompute::full) return block.input_bytes;
  double total = 0;
  for (const Op& op : block.ops) {
    total += op.saved_bytes;
    if (recompute == Recompute::selective) total -= op.selective_freed_bytes;
  }
  return total;
}

}  // namespace shardplan
