// Compute time on one GPU: each op of layer.hpp against the GPU profile's peaks, GEMM efficiency
// curve, memory-bound efficiency and launch cost; and the model FLOPs that MFU counts.
#pragma once

#include "shardplan/layer.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// Dense peak FLOP/s of a dtype; a dtype the GPU lacks falls back to its bf16 peak.
double peak_flops(const GpuSpec& gpu, MathDtype dtype);

/// Share of peak a GEMM of `flops` reaches: the GPU profile's curve, interpolated in
/// log(flops) and clamped at its ends.
double gemm_efficiency(const GpuSpec& gpu, double flops);

/// The share of its tile slots a GEMM fills: `problems` outputs of rows x cols in 128 x 256 tiles,
/// one tile per SM at a time, the last wave paid in full. The presets' curves (from MAMF, a
/// best-shape figure) are full-wave figures that a GEMM reaches times this share; it is 1 for a
/// profile without an sm_count and for a probe-measured curve, whose shapes' waves it holds.
double gemm_wave_share(const GpuSpec& gpu, double rows, double cols, double problems);

/// The share of peak a fused attention kernel reaches at causal sequence length `seq` and head
/// dim `head_dim` (0: unknown, the profile's level): GpuSpec::attention_half_seq.
double attention_efficiency_at(const GpuSpec& gpu, double seq, double head_dim);

/// Forward and backward seconds of one op on one GPU (a roofline per op: FLOPs at the curve's
/// efficiency or bytes at the memory efficiency, whichever is slower, plus launch cost).
double op_forward_s(const Op& op, const GpuSpec& gpu, MathDtype dtype);
double op_backward_s(const Op& op, const GpuSpec& gpu, MathDtype dtype);

/// The 16-bit dtype beside a GEMM dtype: bf16 next to fp8 / fp4, else the dtype itself.
MathDtype sixteen_bit(MathDtype gemm);

/// How a block's weight GEMMs run under a recipe: their dtype and the memory-bound bytes that
/// quantizing each input element costs; the attention core's GEMMs stay in 16 bits.
struct GemmPrecision {
  MathDtype dtype = MathDtype::bf16;
  double quantize_bytes_per_element = 0;
  bool router_in_bf16 = true;
  /// What the stack's grouped GEMMs (a MoE layer's routed experts) reach in 16 bits against a
  /// dense GEMM of one expert's size (framework kernels.grouped_gemm_16bit_share; 1 = as fast).
  double grouped_16bit_share = 1;
};
/// The transformer layers' linears, the LM head / embedding, and the layers a recipe keeps in
/// 16 bits (NVFP4's first and last blocks).
GemmPrecision layer_gemms(const PrecisionRecipe& recipe);
GemmPrecision edge_gemms(const PrecisionRecipe& recipe);
GemmPrecision kept_gemms(const PrecisionRecipe& recipe);

struct BlockTime {
  double forward_s = 0;
  double backward_s = 0;      // without any recompute
  double selective_s = 0;     // forward of the ops selective recompute redoes
  double selective_flops = 0;  // and their FLOPs
  double gemm_forward_s = 0;  // the GEMMs' share of forward_s (what TP comm can hide behind)
  double weight_grad_s = 0;   // of backward_s, the weight GEMMs' wgrad half (the W pass)
  double quantize_s = 0;      // of forward_s + backward_s, the recipe's cast / transpose passes
};
BlockTime time_block(const Block& block, const GpuSpec& gpu, const GemmPrecision& gemms);
/// `a_share` of a plus the rest of b, field by field.
BlockTime blend(const BlockTime& a, const BlockTime& b, double a_share);
/// One transformer layer of a model of `layers` under the recipe: its low-precision layers and
/// the ones it keeps in 16 bits, mixed in the share the model has of each; the stack's 16-bit
/// grouped GEMMs at `grouped_16bit_share` (GemmPrecision).
BlockTime time_layer(const Block& block, const GpuSpec& gpu, const PrecisionRecipe& recipe,
                     int layers, double grouped_16bit_share = 1);

/// Model FLOPs of one forward pass over `sequences` sequences: 2 x tokens x (matmul params a
/// token touches + LM head) + 2 x sequences x (query-key pairs summed over layers) x heads x
/// (qk + v head widths), i.e. 4 x sequences x L x s^2 x heads x head_dim for ordinary full
/// attention (sliding windows attend fewer keys; MLA's qk and v widths differ). For GPT shapes,
/// 3x this is Korthikanti et al. Eq. 7: 72 B L s h^2 (1 + s/(6h) + V/(12 h L)).
double forward_model_flops(const ModelSpec& model, double sequences, int seq_len);

}  // namespace shardplan
