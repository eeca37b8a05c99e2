// Saved activations under FP8 / MXFP8 / NVFP4 recipes: Transformer Engine's linears keep their
// quantized input (one copy, with its scales) for the weight gradient, everything else stays in
// bf16; torchao's keep the bf16 input. Expected bytes are the per-tensor split worked by hand:
// the linear inputs against the rest (Korthikanti et al. 2022 Sec. 4.1).
#include <doctest/doctest.h>

#include "shardplan/layer.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

double layer_bytes(const ModelSpec& m, Framework f, Precision pr, AttentionKind a, int seq,
                   int micro_batch = 1) {
  TrainingSpec t = test::training(seq, 8);
  t.framework = load_framework(f);
  set_precision(t, pr);
  t.attention = a;
  return saved_activation_bytes(describe_micro_batch(m, t, test::plan(1, 1, 1, micro_batch)).layer,
                                Recompute::none);
}

}  // namespace

TEST_CASE("llama-2-7b layer under Megatron: bf16 16h + 6f per token, fp8 saves the linear inputs") {
  const ModelSpec m = load_model("llama-2-7b");  // h 4096, f 11008, 32 heads, no dropout
  const double h = 4096, f = 11008, s = 4096;
  // bf16 per token: input norm 2h, QKV input 2h, flash Q/K/V 6h + fp32 LSE 4 x 32 heads, output
  // projection input (the attention output) 2h, post-attention norm 2h, MLP up input 2h, SwiGLU
  // gate and up 4f, MLP down input 2f. The linear inputs: QKV 2h, up 2h, down 2f, projection 2h.
  const double bf16 = s * (16 * h + 6 * f + 4 * 32);
  CHECK(layer_bytes(m, Framework::megatron, Precision::bf16, AttentionKind::flash, 4096) ==
        doctest::Approx(bf16));
  // fp8 tensorwise (current scaling): QKV, up and down inputs at 1 byte; the projection saves the
  // original input (Megatron's set_save_original_input), the one the attention kernel keeps.
  CHECK(layer_bytes(m, Framework::megatron, Precision::fp8_tensorwise, AttentionKind::flash,
                    4096) == doctest::Approx(bf16 - s * (h + h + f)));
  // fp8 delayed, Megatron's default fp8: the projection keeps its own 1-byte copy besides.
  const double delayed = bf16 - s * (h + h + f) + s * h;
  CHECK(layer_bytes(m, Framework::megatron, Precision::fp8, AttentionKind::flash, 4096) ==
        doctest::Approx(delayed));
  CHECK(delayed / bf16 == doctest::Approx(0.8853).epsilon(1e-3));
  // MXFP8: 1 + 1/32 bytes (the column-wise copy and its E8M0 scales).
  CHECK(layer_bytes(m, Framework::megatron, Precision::mxfp8, AttentionKind::flash, 4096) ==
        doctest::Approx(bf16 - s * (2 - 1.03125) * (2 * h + f)));
  // NVFP4: 0.5 + 1/16 bytes in the 22 of 32 layers that run it, 2 in the first 2 and last 8.
  const double nvfp4_q = 2 + 22.0 / 32 * (0.5625 - 2);
  CHECK(layer_bytes(m, Framework::megatron, Precision::nvfp4, AttentionKind::flash, 4096) ==
        doctest::Approx(bf16 - s * (2 - nvfp4_q) * (2 * h + f)));
  // torchtitan's torchao float8 keeps the bf16 inputs.
  CHECK(layer_bytes(m, Framework::torchtitan, Precision::fp8_tensorwise, AttentionKind::flash,
                    4096) == doctest::Approx(bf16));
}

TEST_CASE("GPT layer 34sbh + 5as^2b: fp8 delayed 27sbh, current scaling 28sbh") {
  // Korthikanti et al. 2022 Sec. 4.1 with unfused attention: of 34 sbh the linear inputs are
  // 14 (QKV 2, projection 2, MLP up 2, MLP down 8). Delayed scaling halves all four: 27 sbh;
  // current scaling keeps the projection's input whole (save_original_input): 28 sbh.
  const ModelSpec m = test::gpt(1, 4096, 32);
  const double s = 2048, b = 2, h = 4096, a = 32;
  const double attention = 5 * a * s * s * b;
  CHECK(layer_bytes(m, Framework::megatron, Precision::bf16, AttentionKind::standard, 2048, 2) ==
        doctest::Approx(34 * s * b * h + attention));
  CHECK(layer_bytes(m, Framework::megatron, Precision::fp8_delayed, AttentionKind::standard, 2048,
                    2) == doctest::Approx(27 * s * b * h + attention));
  CHECK(layer_bytes(m, Framework::megatron, Precision::fp8_tensorwise, AttentionKind::standard,
                    2048, 2) == doctest::Approx(28 * s * b * h + attention));
}

TEST_CASE("a MoE layer's router keeps the normed input; shared experts a quantized copy of it") {
  // Qwen3-30B-A3B: hidden 2048, 128 experts, no shared experts. The router's weight gradient
  // needs the normed input (s x h, bf16) beside its fp32 probabilities (s x 128 x 4).
  const ModelSpec q = load_model("qwen3-30b-a3b");
  TrainingSpec t = test::training(4096, 8);
  const auto op_saved = [](const Block& b, const std::string& name) {
    double bytes = 0;
    for (const Op& op : b.ops)
      if (name == op.name) bytes += op.saved_bytes;
    return bytes;
  };
  const Block layer = describe_micro_batch(q, t, test::plan(1, 1, 1)).layer;
  CHECK(op_saved(layer, "router") == doctest::Approx(4096.0 * 2048 * 2));
  CHECK(op_saved(layer, "router probabilities") == doctest::Approx(4096.0 * 128 * 4));
  // DeepSeek-V3's shared expert reads the same tensor: in bf16 it saves nothing of its own, under
  // Megatron's fp8 (delayed) its 1-byte copy (hidden 7168).
  const ModelSpec d = load_model("deepseek-v3");
  const auto up_saved = [&](const TrainingSpec& tr) {
    return op_saved(describe_micro_batch(d, tr, test::plan(1, 1, 1)).layer, "mlp up projection");
  };
  const double bf16_up = up_saved(t);
  t.framework = load_framework(Framework::megatron);
  set_precision(t, Precision::fp8);
  CHECK(up_saved(t) - bf16_up == doctest::Approx(4096.0 * 7168 * 1));
}
