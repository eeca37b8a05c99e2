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

namespace {

// Attention kernels run in 16-bit even when the GEMMs run in fp8 (Transformer Engine).
MathDtype attention_dtype(MathDtype gemm) {
  return gemm == MathDtype::fp8 ? MathDtype::bf16 : gemm;
}

double stream_s(double bytes, const GpuSpec& gpu) {
  return bytes / (gpu.hbm_bytes_per_s * gpu.memory_efficiency);
}

// A grouped GEMM's experts are separate problems in one kernel (CUTLASS grouped GEMM, DeepGEMM's
// contiguous layout: tiles never span two experts), so tile quantisation and the last wave's
// tail are paid per expert: its efficiency is that of one expert's GEMM.
double gemm_s(const Op& op, const GpuSpec& gpu, MathDtype dtype) {
  const double sized = op.grouped && op.batch > 1 ? op.flops / op.batch : op.flops;
  return std::max(op.flops / (peak_flops(gpu, dtype) * gemm_efficiency(gpu, sized)),
                  stream_s(op.bytes, gpu));
}

}  // namespace

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

double op_forward_s(const Op& op, const GpuSpec& gpu, MathDtype dtype) {
  switch (op.kind) {
    case OpKind::gemm:
      return gemm_s(op, gpu, dtype);
    case OpKind::attention:
      return op.flops / (peak_flops(gpu, attention_dtype(dtype)) * gpu.attention_efficiency) +
             gpu.kernel_overhead_s;
    case OpKind::elementwise:
      return stream_s(op.bytes, gpu) + gpu.kernel_overhead_s;
  }
  return 0;
}

double op_backward_s(const Op& op, const GpuSpec& gpu, MathDtype dtype) {
  switch (op.kind) {
    case OpKind::gemm:
      // dgrad and wgrad: two GEMMs of the forward's size.
      return 2.0 * gemm_s(op, gpu, dtype);
    case OpKind::attention:
      return op.backward_flops /
                 (peak_flops(gpu, attention_dtype(dtype)) * gpu.attention_efficiency) +
             gpu.kernel_overhead_s;
    case OpKind::elementwise:
      // Reads the incoming gradient and the saved tensor, writes the outgoing gradient: three
      // tensors where the forward moved two.
      return 1.5 * stream_s(op.bytes, gpu) + gpu.kernel_overhead_s;
  }
  return 0;
}

BlockTime time_block(const Block& block, const GpuSpec& gpu, MathDtype dtype) {
  BlockTime t;
  for (const Op& op : block.ops) {
    const double f = op_forward_s(op, gpu, dtype);
    t.forward_s += f;
    t.backward_s += op_backward_s(op, gpu, dtype);
    if (op.selective) t.selective_s += f;
    if (op.kind == OpKind::gemm) t.gemm_forward_s += f;
    // A weight GEMM's backward is dgrad + wgrad of equal size; the core attention's two GEMMs
    // (layer.cpp names them "attention ...") multiply activations, so all of theirs is B.
    if (op.kind == OpKind::gemm && !std::string_view(op.name).starts_with("attention"))
      t.weight_grad_s += op_backward_s(op, gpu, dtype) / 2.0;
  }
  // Selective recompute redoes the core attention: its GEMMs as well as softmax and dropout.
  for (const Op& op : block.ops) {
    if (op.kind == OpKind::gemm && op.batch > 1) t.selective_s += op_forward_s(op, gpu, dtype);
  }
  return t;
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
