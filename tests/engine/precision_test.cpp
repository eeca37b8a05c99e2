// Precision recipes priced from their rows (profiles/precisions/*.json): one GEMM's time on a
// B200 hand-computed from the datasheet peak, the profile's GEMM efficiency and the row's
// quantization bytes; the extra weight copies in the memory model; refusal on Hopper.
#include <doctest/doctest.h>

#include "shardplan/compute.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/rules.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// One weight GEMM of a layer: 32768 tokens x 16384 in -> 16384 out, large enough (1.76e13
// FLOPs) that B200's efficiency curve sits at its top point, 0.6507 (profiles/gpus/b200.json).
constexpr double kM = 32768, kN = 16384, kK = 16384;

Block one_linear() {
  Op op;
  op.name = "mlp up projection";
  op.kind = OpKind::gemm;
  op.m = kM, op.n = kN, op.k = kK;
  op.flops = 2.0 * kM * kN * kK;
  op.backward_flops = 2.0 * op.flops;
  Block b;
  b.ops.push_back(op);
  return b;
}

// The multiplier profiles/fit/step-time.json ships for a fitted constant.
double shipped(const std::string& name) {
  for (const FittedConstant& c : shipped_fit().constants)
    if (c.name == name) return c.multiplier;
  return 1;
}

// B200 as loaded: its profile's top GEMM efficiency 0.6507 and memory efficiency 0.72
// (profiles/gpus/b200.json), each times the shipped fit's multiplier; fp8 and fp4 GEMMs at the
// MAMF fp8 share 0.984 (tools/fit_gemm_dtypes.py) times the fitted low-precision share (fp4:
// times the fitted fp4 share too).
struct B200Figures {
  double top, stream_bytes_per_s, fp8_share, fp4_share;
  // The share of its tile slots each GEMM of one_linear() fills on the B200's 148 SMs: the
  // forward and data gradient (32768 x 16384 outputs: 16384 tiles in 111 waves) and the weight
  // gradient (16384 x 16384: 8192 tiles in 56 waves).
  double forward_waves, dgrad_waves, wgrad_waves;
};
B200Figures b200_figures(const GpuSpec& b200) {
  B200Figures f;
  f.top = b200.gemm_efficiency.back().efficiency;
  REQUIRE(b200.sm_count == 148);
  f.forward_waves = test::tile_wave_share(kM, kN, 1, 148);
  f.dgrad_waves = test::tile_wave_share(kM, kK, 1, 148);
  f.wgrad_waves = test::tile_wave_share(kN, kK, 1, 148);
  CHECK(f.forward_waves == doctest::Approx(16384.0 / (111 * 148)));
  CHECK(f.wgrad_waves == doctest::Approx(8192.0 / (56 * 148)));
  f.stream_bytes_per_s = 8000e9 * b200.memory_efficiency;
  f.fp8_share = b200.gemm_dtype_share[static_cast<int>(MathDtype::fp8)] *
                b200.low_precision_gemm_factor;
  f.fp4_share = b200.gemm_dtype_share[static_cast<int>(MathDtype::fp4)] *
                b200.low_precision_gemm_factor * b200.fp4_gemm_factor;
  CHECK(f.top == doctest::Approx(0.6507 * shipped("gemm_share_of_mamf")).epsilon(1e-3));
  CHECK(b200.memory_efficiency ==
        doctest::Approx(0.72 * shipped("memory_kernel_efficiency")).epsilon(1e-3));
  CHECK(b200.gemm_dtype_share[static_cast<int>(MathDtype::fp8)] == doctest::Approx(0.984));
  CHECK(b200.low_precision_gemm_factor ==
        doctest::Approx(shipped("low_precision_gemm_share")));
  CHECK(b200.fp4_gemm_factor == doctest::Approx(shipped("fp4_gemm_share")));
  return f;
}

}  // namespace

TEST_CASE("mxfp8 on a B200: the GEMM at the fp8 peak plus the row's 4.0625 B per input element") {
  const GpuSpec b200 = load_gpu("B200");
  const PrecisionRecipe r = load_recipe(Precision::mxfp8);
  REQUIRE(r.gemm_dtype == MathDtype::fp8);
  REQUIRE(r.quantize_bytes_per_element == 4.0625);  // 2 read + 1 + 1 written + 2 x 1/32 scales
  const B200Figures b = b200_figures(b200);
  const BlockTime t = time_block(one_linear(), b200, layer_gemms(r));
  const double flops = 2.0 * kM * kN * kK;
  // HGX B200 fp8 dense 4.5 PF, at the share of its tile slots each GEMM fills.
  const double gemm_s = flops / (4500e12 * b.top * b.fp8_share);
  const double cast_in_s = 4.0625 * kM * kK / b.stream_bytes_per_s;   // forward: the input
  const double cast_grad_s = 4.0625 * kM * kN / b.stream_bytes_per_s;  // backward: dY
  CHECK(t.forward_s == doctest::Approx(gemm_s / b.forward_waves + cast_in_s).epsilon(1e-9));
  CHECK(
      t.backward_s ==
      doctest::Approx(gemm_s / b.dgrad_waves + gemm_s / b.wgrad_waves + cast_grad_s).epsilon(1e-9));
  CHECK(t.quantize_s == doctest::Approx(cast_in_s + cast_grad_s).epsilon(1e-9));
  const BlockTime bf16 = time_block(one_linear(), b200, layer_gemms(load_recipe(Precision::bf16)));
  CHECK(bf16.forward_s ==
        doctest::Approx(flops / (2250e12 * b.top * b.forward_waves)).epsilon(1e-9));
  CHECK(bf16.quantize_s == 0);
}

TEST_CASE("nvfp4 on a B200: fp4 peak, 5.125 B per element, and the first 2 and last 8 layers bf16") {
  const GpuSpec b200 = load_gpu("B200");
  const PrecisionRecipe r = load_recipe(Precision::nvfp4);
  REQUIRE(r.gemm_dtype == MathDtype::fp4);
  REQUIRE(b200.peak_flops[static_cast<int>(MathDtype::fp4)] == 9000e12);  // HGX B200 FP4 dense
  const double flops = 2.0 * kM * kN * kK;
  const B200Figures b = b200_figures(b200);
  const double fp4_s = flops / (9000e12 * b.top * b.fp4_share * b.forward_waves) +
                       5.125 * kM * kK / b.stream_bytes_per_s;
  const double bf16_s = flops / (2250e12 * b.top * b.forward_waves);
  CHECK(time_block(one_linear(), b200, layer_gemms(r)).forward_s ==
        doctest::Approx(fp4_s).epsilon(1e-9));
  // NVIDIA's 12B NVFP4 model has 62 blocks, 10 of them kept in BF16 (arXiv:2509.25149 Sec. 4.1).
  const BlockTime layer = time_layer(one_linear(), b200, r, 62);
  CHECK(layer.forward_s == doctest::Approx(52.0 / 62 * fp4_s + 10.0 / 62 * bf16_s).epsilon(1e-9));
}

TEST_CASE(
    "a stack's 16-bit grouped GEMMs run at its grouped share; its fp8 ones and dense ones do not") {
  // profiles/frameworks/megatron.json kernels.grouped_gemm_16bit_share (1.0) times the fitted
  // multiplier profiles/fit/step-time.json ships; a profile without the figure keeps 1.
  const FrameworkPricing megatron = load_framework(Framework::megatron).pricing;
  const double share = megatron.grouped_gemm_16bit_share;
  CHECK(share == doctest::Approx(shipped("megatron_grouped_16bit_gemm_share")));
  CHECK(load_framework(Framework::torchtitan).pricing.grouped_gemm_16bit_share == 1.0);
  const GpuSpec b200 = load_gpu("B200");
  Block grouped = one_linear();
  grouped.ops[0].grouped = true;  // one expert (batch 1): the same problem as the dense GEMM
  GemmPrecision bf16 = layer_gemms(load_recipe(Precision::bf16));
  const BlockTime dense = time_block(one_linear(), b200, bf16);
  bf16.grouped_16bit_share = share;
  const BlockTime slow = time_block(grouped, b200, bf16);
  CHECK(slow.forward_s == doctest::Approx(dense.forward_s / share).epsilon(1e-12));
  CHECK(slow.backward_s == doctest::Approx(dense.backward_s / share).epsilon(1e-12));
  CHECK(time_block(one_linear(), b200, bf16).forward_s == doctest::Approx(dense.forward_s));
  GemmPrecision mx = layer_gemms(load_recipe(Precision::mxfp8));
  const double mx_dense = time_block(one_linear(), b200, mx).forward_s;
  mx.grouped_16bit_share = share;
  CHECK(time_block(grouped, b200, mx).forward_s == doctest::Approx(mx_dense).epsilon(1e-12));
  // NVFP4 keeps 10 of 62 blocks in bf16: only those take the grouped share.
  const PrecisionRecipe fp4 = load_recipe(Precision::nvfp4);
  const double fp4_s = time_block(one_linear(), b200, layer_gemms(fp4)).forward_s;
  CHECK(time_layer(grouped, b200, fp4, 62, share).forward_s ==
        doctest::Approx(52.0 / 62 * fp4_s + 10.0 / 62 * dense.forward_s / share).epsilon(1e-9));
}

TEST_CASE("the attention core and the LM head stay in bf16 under fp8 recipes") {
  const PrecisionRecipe r = load_recipe(Precision::fp8_delayed);
  CHECK(edge_gemms(r).dtype == MathDtype::bf16);
  CHECK(layer_gemms(r).dtype == MathDtype::fp8);
  Block attention = one_linear();
  attention.ops[0].name = "attention scores";
  const GpuSpec h100 = load_gpu("H100-SXM");
  CHECK(time_block(attention, h100, layer_gemms(r)).forward_s ==
        doctest::Approx(time_block(attention, h100, layer_gemms(PrecisionRecipe{})).forward_s));
  CHECK(time_block(attention, h100, layer_gemms(r)).quantize_s == 0);
}

TEST_CASE("the bf16 row is the default recipe the engine prices hand-built specs with") {
  const PrecisionRecipe row = load_recipe(Precision::bf16);
  const PrecisionRecipe built;
  CHECK(row.gemm_dtype == built.gemm_dtype);
  CHECK(row.quantize_bytes_per_element == built.quantize_bytes_per_element);
  CHECK(row.weight_bytes == built.weight_bytes);
  CHECK(row.weight_copy_bytes == built.weight_copy_bytes);
  CHECK(row.activation_bytes == built.activation_bytes);
  CHECK(row.gradient_bytes == built.gradient_bytes);
  CHECK(row.master_bytes == built.master_bytes);
  CHECK(row.moment_bytes == built.moment_bytes);
  CHECK(row.all_gather_bytes == built.all_gather_bytes);
  CHECK(row.head_in_bf16 == built.head_in_bf16);
  CHECK(row.router_in_bf16 == built.router_in_bf16);
}

TEST_CASE("mxfp8 holds row- and column-wise copies: 2.0625 B/param beside the 16 of bf16 AdamW") {
  TrainingSpec t = test::training(4096, 8);
  set_precision(t, Precision::mxfp8);
  const StateBytes b = state_bytes_per_param(test::params_only(1e9), t);
  CHECK(b.weights == 2.0);
  CHECK(b.weight_copies == 2.0625);  // (1 + 1/32) per orientation
  CHECK(b.total() == doctest::Approx(18.0625));
  set_precision(t, Precision::bf16);
  CHECK(state_bytes_per_param(test::params_only(1e9), t).weight_copies == 0);
  CHECK(state_bytes_per_param(test::params_only(1e9), t).total() == 16.0);
}

TEST_CASE("fp8 is each framework's default recipe") {
  CHECK(resolve_precision(Precision::fp8, load_framework(Framework::megatron)) ==
        Precision::fp8_delayed);  // Megatron-LM fp8_recipe default "delayed"
  CHECK(resolve_precision(Precision::fp8, load_framework(Framework::torchtitan)) ==
        Precision::fp8_tensorwise);  // torchtitan float8 recipe_name None: tensorwise
  CHECK(resolve_precision(Precision::fp8, load_framework(Framework::fsdp)) ==
        Precision::fp8_tensorwise);
  CHECK(resolve_precision(Precision::fp8, FrameworkProfile{}) == Precision::fp8_delayed);
  CHECK(resolve_precision(Precision::mxfp8, load_framework(Framework::torchtitan)) ==
        Precision::mxfp8);
  TrainingSpec t = test::training(4096, 8);
  t.framework = load_framework(Framework::torchtitan);
  set_precision(t, Precision::fp8);
  CHECK(t.precision == Precision::fp8);
  CHECK(t.recipe.id == Precision::fp8_tensorwise);
}

TEST_CASE("mxfp8 and nvfp4 are refused on an H100 with the generation that runs them") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(4096, 64);
  t.framework = load_framework(Framework::megatron);
  const ClusterSpec h100 = test::cluster(8, "dgx-h100");
  set_precision(t, Precision::mxfp8);
  const RuleContext c{m, t, h100, {}};
  const auto problems = check_inputs(c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].rule == RuleId::precision_generation);
  const PlanProblem said = words(problems[0], c);
  CHECK(said.field == "--precision");
  CHECK(said.message == "mxfp8 needs Blackwell (B200, B300, GB200, GB300); H100-SXM is Hopper");

  set_precision(t, Precision::nvfp4);  // no fp4 tensor cores at all
  const auto fp4 = check_inputs(c);
  REQUIRE(fp4.size() == 1);
  CHECK(fp4[0].rule == RuleId::precision_supported);
  CHECK(test::contains(words(fp4[0], c).message, "nvfp4 needs Blackwell"));

  const ClusterSpec b200 = test::cluster(8, "dgx-b200");
  CHECK(check_inputs({m, t, b200, {}}).empty());
  set_precision(t, Precision::mxfp8);
  CHECK(check_inputs({m, t, b200, {}}).empty());
}

TEST_CASE("a recipe the framework does not run is refused by the rule table") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(4096, 64);
  t.framework = load_framework(Framework::torchtitan);
  set_precision(t, Precision::nvfp4);  // Megatron-LM's --fp4-recipe only
  const ClusterSpec b200 = test::cluster(8, "dgx-b200");
  const RuleContext c{m, t, b200, {}};
  const auto problems = check_inputs(c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].rule == RuleId::framework_precision);
  CHECK(test::contains(words(problems[0], c).message, "megatron do"));
  t.framework = load_framework(Framework::torchtitan);
  set_precision(t, Precision::mxfp8);  // quantize.linear.mx
  CHECK(check_inputs({m, t, b200, {}}).empty());
}
