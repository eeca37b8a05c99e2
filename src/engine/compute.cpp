// Compute time of ops on one GPU: a roofline per op from the profile's GEMM efficiency curve,
// its memory-bound efficiency and launch cost; and the model-FLOP count MFU is measured by.
#include "shardplan/compute.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "shardplan/error.hpp"
#include "shardplan/model.hpp"

namespace shardplan {

double peak_flops(const GpuSpec& gpu, MathDtype dtype) {
  const double p = gpu.peak_flops[static_cast<int>(dtype)];
  return p > 0 ? p : gpu.peak_flops[static_cast<int>(MathDtype::bf16)];
}

MathDtype sixteen_bit(MathDtype gemm) {
  return gemm == MathDtype::fp8 || gemm == MathDtype::fp4 ? MathDtype::bf16 : gemm;
}

GemmPrecision layer_gemms(const PrecisionRecipe& r) {
  return {r.gemm_dtype, r.quantize_bytes_per_element, r.router_in_bf16};
}

GemmPrecision edge_gemms(const PrecisionRecipe& r) {
  return r.head_in_bf16 ? kept_gemms(r) : layer_gemms(r);
}

GemmPrecision kept_gemms(const PrecisionRecipe& r) {
  return {sixteen_bit(r.gemm_dtype), 0.0, true};
}

namespace {

// One output tile for every GPU: 128 x 256, the large-problem CTA tile of Hopper and Blackwell
// GEMM kernels (CUTLASS 3's warp-specialized 128x256 configurations, DeepGEMM's BLOCK_M 128 with
// BLOCK_N up to 256). Libraries choose among tiles to waste less, so the waste counted here is an
// upper bound; 128 x 256 was chosen over 128 x 128 by leave-one-group-out error
// (docs/design.md, Compute).
constexpr double kTileRows = 128;
constexpr double kTileCols = 256;

// Attention kernels run in 16-bit even when the GEMMs run in fp8 (Transformer Engine).
MathDtype attention_dtype(MathDtype gemm) {
  return sixteen_bit(gemm);
}

double stream_s(double bytes, const GpuSpec& gpu) {
  return bytes / (gpu.hbm_bytes_per_s * gpu.memory_efficiency);
}

// A grouped GEMM's experts are separate problems in one kernel (CUTLASS grouped GEMM, DeepGEMM's
// contiguous layout: tiles never span two experts), so its efficiency on the FLOP curve is that
// of one expert's GEMM, and its tiles are counted per expert. `rows` x `cols` is the output of
// this GEMM (forward m x n, data gradient m x k, weight gradient n x k).
double gemm_s(const Op& op, double rows, double cols, const GpuSpec& gpu, MathDtype dtype) {
  const double sized = op.grouped && op.batch > 1 ? op.flops / op.batch : op.flops;
  const bool low = dtype == MathDtype::fp8 || dtype == MathDtype::fp4;
  const double share = gpu.gemm_dtype_share[static_cast<int>(dtype)] *
                       (low ? gpu.low_precision_gemm_factor : 1.0) *
                       (dtype == MathDtype::fp4 ? gpu.fp4_gemm_factor : 1.0);
  const double waves = gemm_wave_share(gpu, rows, cols, op.batch);
  return std::max(op.flops / (peak_flops(gpu, dtype) * gemm_efficiency(gpu, sized) * share * waves),
                  stream_s(op.bytes, gpu));
}

// A fused attention kernel's seconds for `flops` at its sequence length and head dim (the op's
// n and k; layer.cpp).
double attention_s(const Op& op, double flops, const GpuSpec& gpu, MathDtype dtype) {
  return flops / (peak_flops(gpu, attention_dtype(dtype)) *
                  attention_efficiency_at(gpu, op.n, op.k)) +
         gpu.kernel_overhead_s;
}

}  // namespace

double gemm_wave_share(const GpuSpec& gpu, double rows, double cols, double problems) {
  // A probe-measured curve was timed on real shapes (the sweep's and the model's own GEMMs), their
  // part-empty waves included: it stands as measured.
  if (gpu.calibrated || gpu.sm_count <= 0 || rows <= 0 || cols <= 0) return 1;
  const double tiles = problems * std::ceil(rows / kTileRows) * std::ceil(cols / kTileCols);
  const double waves = std::ceil(tiles / gpu.sm_count);
  return problems * rows * cols / (waves * gpu.sm_count * kTileRows * kTileCols);
}

double gemm_efficiency(const GpuSpec& gpu, double flops) {
  const auto& c = gpu.gemm_efficiency;
  SHARDPLAN_CHECK(!c.empty(), "GPU profile without a GEMM efficiency curve");
  if (flops <= c.front().flops) return c.front().efficiency * flops / c.front().flops;
  if (flops >= c.back().flops) return c.back().efficiency;
  const double x = std::log(flops);
  for (size_t i = 1; i < c.size(); ++i) {
    if (flops <= c[i].flops) {
      const double x0 = std::log(c[i - 1].flops), x1 = std::log(c[i].flops);
      const double w = (x - x0) / (x1 - x0);
      return c[i - 1].efficiency + w * (c[i].efficiency - c[i - 1].efficiency);
    }
  }
  return c.back().efficiency;
}

double attention_efficiency_at(const GpuSpec& gpu, double seq, double head_dim) {
  double e = gpu.attention_efficiency;
  if (gpu.attention_half_seq > 0 && seq > 0) e *= seq / (seq + gpu.attention_half_seq);
  if (gpu.attention_half_head_dim > 0 && head_dim > 0) {
    const double d = gpu.attention_half_head_dim;
    e *= (head_dim / (head_dim + d)) / (128.0 / (128.0 + d));
  }
  return std::min(e, 0.95);
}

double op_forward_s(const Op& op, const GpuSpec& gpu, MathDtype dtype) {
  switch (op.kind) {
    case OpKind::gemm:
      return gemm_s(op, op.m, op.n, gpu, dtype);
    case OpKind::attention:
      return attention_s(op, op.flops, gpu, dtype);
    case OpKind::elementwise:
      return stream_s(op.bytes, gpu) + gpu.kernel_overhead_s;
  }
  return 0;
}

double op_backward_s(const Op& op, const GpuSpec& gpu, MathDtype dtype) {
  switch (op.kind) {
    case OpKind::gemm:
      // dgrad (output m x k) and wgrad (output n x k): each as many FLOPs as the forward.
      return gemm_s(op, op.m, op.k, gpu, dtype) + gemm_s(op, op.n, op.k, gpu, dtype);
    case OpKind::attention:
      return attention_s(op, op.backward_flops, gpu, dtype);
    case OpKind::elementwise:
      // Reads the incoming gradient and the saved tensor, writes the outgoing gradient: three
      // tensors where the forward moved two.
      return 1.5 * stream_s(op.bytes, gpu) + gpu.kernel_overhead_s;
  }
  return 0;
}

namespace {

// The core attention's two GEMMs (layer.cpp names them "attention ...") multiply activations.
bool activation_gemm(const Op& op) {
  return std::string_view(op.name).starts_with("attention");
}

// The dtype a GEMM op runs in under `g`, and whether its inputs are quantized to it: the
// attention core and (by the recipe) the router stay in 16 bits.
bool quantized(const Op& op, const GemmPrecision& g) {
  if (op.kind != OpKind::gemm || activation_gemm(op)) return false;
  return !(g.router_in_bf16 && std::string_view(op.name) == "router");
}

}  // namespace

BlockTime time_block(const Block& block, const GpuSpec& gpu, const GemmPrecision& g) {
  BlockTime t;
  for (const Op& op : block.ops) {
    const MathDtype dtype = quantized(op, g) ? g.dtype : sixteen_bit(g.dtype);
    // The stack's 16-bit grouped GEMMs against dense ones of an expert's size (GemmPrecision).
    const double slower =
        op.grouped && sixteen_bit(dtype) == dtype ? 1.0 / g.grouped_16bit_share : 1.0;
    const double f = op_forward_s(op, gpu, dtype) * slower;
    const double b = op_backward_s(op, gpu, dtype) * slower;
    t.forward_s += f;
    t.backward_s += b;
    if (op.selective) {
      t.selective_s += f;
      t.selective_flops += op.flops;
    }
    if (op.kind == OpKind::gemm) t.gemm_forward_s += f;
    // A weight GEMM's backward is dgrad + wgrad of equal size; the core attention's is all B.
    if (op.kind == OpKind::gemm && !activation_gemm(op)) t.weight_grad_s += b / 2.0;
    if (quantized(op, g) && g.quantize_bytes_per_element > 0) {
      // Forward quantizes the m x k input, backward the m x n output gradient (the weight's
      // copies are cached across micro-batches): memory-bound passes of the recipe's bytes.
      const double q = g.quantize_bytes_per_element * op.batch;
      t.quantize_s += stream_s(q * op.m * op.k, gpu) + stream_s(q * op.m * op.n, gpu);
      t.forward_s += stream_s(q * op.m * op.k, gpu);
      t.backward_s += stream_s(q * op.m * op.n, gpu);
      if (op.selective) t.selective_s += stream_s(q * op.m * op.k, gpu);  // quantized again
    }
  }
  return t;
}

BlockTime blend(const BlockTime& a, const BlockTime& b, double a_share) {
  const double w = a_share, v = 1.0 - a_share;
  BlockTime t;
  t.forward_s = w * a.forward_s + v * b.forward_s;
  t.backward_s = w * a.backward_s + v * b.backward_s;
  t.selective_s = w * a.selective_s + v * b.selective_s;
  t.selective_flops = w * a.selective_flops + v * b.selective_flops;
  t.gemm_forward_s = w * a.gemm_forward_s + v * b.gemm_forward_s;
  t.weight_grad_s = w * a.weight_grad_s + v * b.weight_grad_s;
  t.quantize_s = w * a.quantize_s + v * b.quantize_s;
  return t;
}

BlockTime time_layer(const Block& block, const GpuSpec& gpu, const PrecisionRecipe& r, int layers,
                     double grouped_16bit_share) {
  GemmPrecision low_gemms = layer_gemms(r), kept = kept_gemms(r);
  low_gemms.grouped_16bit_share = kept.grouped_16bit_share = grouped_16bit_share;
  const BlockTime low = time_block(block, gpu, low_gemms);
  const double share = r.low_precision_layer_share(layers);
  if (share >= 1.0) return low;
  return blend(low, time_block(block, gpu, kept), share);
}

double forward_model_flops(const ModelSpec& m, double sequences, int seq_len) {
  const ParamCounts c = count_params(m);
  const double tokens = sequences * seq_len;
  if (!m.has_architecture()) return 2.0 * tokens * c.total;
  const double per_token = c.layers_matmul_active + static_cast<double>(m.hidden) * m.vocab;
  // QK^T and AV: 2 FLOPs per multiply-add over qk and v head widths (MLA's differ).
  const double attention = 2.0 * sequences * attended_pairs(m, seq_len) *
                           (static_cast<double>(m.heads) * (m.qk_head_width() + m.v_head_width()));
  return 2.0 * tokens * per_token + attention;
}

}  // namespace shardplan
