// Megatron-Core's selective recompute modules (--recompute-modules): what each one frees and
// what it runs again, from DeepSeek-V3's shapes (config.json: hidden 7168, 128 heads, q rank
// 1536, kv rank 512, qk 128 + 64 rope, v 128, 8 of 256 experts of width 2048, one shared).
#include <doctest/doctest.h>

#include "shardplan/compute.hpp"
#include "shardplan/error.hpp"
#include "shardplan/layer.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

constexpr double kTokens = 4096;

Block deepseek_layer(unsigned modules, Framework framework = Framework::megatron) {
  TrainingSpec t = test::training(4096, 8);
  t.framework = load_framework(framework);
  t.attention = AttentionKind::flash;
  ParallelPlan p = test::plan(1, 1, 1);
  p.recompute = Recompute::selective;
  p.recompute_modules = modules;
  return describe_micro_batch(load_model("deepseek-v3"), t, p).layer;
}

double freed(const Block& b) {
  return saved_activation_bytes(b, Recompute::none) -
         saved_activation_bytes(b, Recompute::selective);
}

double recomputed_flops(const Block& b) {
  double f = 0;
  for (const Op& op : b.ops)
    if (op.selective) f += op.flops;
  return f;
}

}  // namespace

TEST_CASE("mla_up_proj frees the Q, K and V flash attention saved, and reruns the up projections") {
  const Block b = deepseek_layer(bit(RecomputeModule::mla_up_proj));
  // Every one of the 128 heads has its own K and V: q and k 192 wide, v 128, in bf16.
  CHECK(freed(b) == doctest::Approx(kTokens * 128 * (192 + 192 + 128) * 2));
  // q up: 1536 -> 128 x 192; kv up: 512 -> 128 x (128 + 128); RoPE has no matmul.
  CHECK(recomputed_flops(b) ==
        doctest::Approx(2 * kTokens * 1536 * 128 * 192 + 2 * kTokens * 512 * 128 * 256));
}

TEST_CASE("moe_act frees the routed experts' down-projection input; layernorm the normed input") {
  // Balanced routing: 8 visits per token, each a 2048-wide SwiGLU output in bf16.
  CHECK(freed(deepseek_layer(bit(RecomputeModule::moe_act))) ==
        doctest::Approx(kTokens * 8 * 2048 * 2));
  // The attention's q down projection and the router each keep the normed input (the shared
  // expert reads the router's copy in bf16): both go with the norms' outputs.
  const Block ln = deepseek_layer(bit(RecomputeModule::layernorm));
  CHECK(freed(ln) == doctest::Approx(2 * kTokens * 7168 * 2));
  CHECK(recomputed_flops(ln) == 0);  // two norms, no matmul
}

TEST_CASE("moe checkpoints the MoE layer: it frees more than moe_act and shared_experts together") {
  const double moe = freed(deepseek_layer(bit(RecomputeModule::moe)));
  const double parts = freed(deepseek_layer(bit(RecomputeModule::moe_act) |
                                            bit(RecomputeModule::shared_experts)));
  CHECK(moe > parts);
  // The router keeps its normed input: the checkpoint's input stays.
  CHECK(moe < saved_activation_bytes(deepseek_layer(0), Recompute::none));
}

TEST_CASE("core_attn reruns the fused attention kernel under Megatron-Core, not torchtitan") {
  // Megatron-Core checkpoints the core attention even when it is fused (TransformerConfig warns
  // that it gains nothing there): the flash forward runs again, 0.5 x 2 x s^2 x 128 x (192 + 128)
  // causal FLOPs, and nothing is freed. torchtitan's op policy keeps SDPA's output.
  const Block megatron = deepseek_layer(0);
  CHECK(recomputed_flops(megatron) ==
        doctest::Approx(0.5 * 2 * kTokens * kTokens * 128 * (192 + 128)));
  CHECK(freed(megatron) == 0);
  CHECK(recomputed_flops(deepseek_layer(0, Framework::torchtitan)) == 0);
}

TEST_CASE("module names parse from commas or spaces and refuse the unknown by name") {
  CHECK(parse_recompute_modules("layernorm,mla_up_proj", "f") ==
        (bit(RecomputeModule::layernorm) | bit(RecomputeModule::mla_up_proj)));
  CHECK(parse_recompute_modules("moe_act mlp", "f") ==
        (bit(RecomputeModule::moe_act) | bit(RecomputeModule::mlp)));
  CHECK(recompute_modules_text(bit(RecomputeModule::mla_up_proj) | bit(RecomputeModule::layernorm),
                               " ") == "layernorm mla_up_proj");
  CHECK_THROWS_WITH_AS(parse_recompute_modules("attention", "--recompute-modules"),
                       doctest::Contains("core_attn"), InputError);
  CHECK_THROWS_AS(parse_recompute_modules(",", "--recompute-modules"), InputError);
}
