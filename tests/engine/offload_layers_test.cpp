// Offload of N layers' saved activations to host memory (Megatron-Core --cpu-offloading
// --cpu-offloading-num-layers): the rule, the device and host memory, and the copies' exposed
// time by hand from the host link (NVLink-C2C 225 GB/s per GPU per direction on GB200, PCIe Gen5
// 63 GB/s on a DGX H100), on the plan of the Megatron-Bridge GB200 recipe for Llama-3.1-405B
// (scripts/performance/configs/llama/llama31_workload_base_configs.py, FP8-CS V1: 128 GPUs,
// TP 2, Megatron-FSDP, GBS 64, cpu_offloading_num_layers 92).
#include <doctest/doctest.h>

#include <algorithm>

#include "shardplan/memory.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TrainingSpec recipe_training(const std::string& framework = "megatron") {
  TrainingSpec t = test::training(8192, 64);
  t.framework = load_framework(parse_framework(framework, "--framework"));
  set_precision(t, Precision::fp8_tensorwise);
  return t;
}

// dp 64 x tp 2, ZeRO-3 (Megatron-FSDP), sequence parallel, N layers offloaded.
ParallelPlan recipe_plan(int layers) {
  ParallelPlan p = test::plan(64, 2, 1);
  p.zero = 3;
  p.sequence_parallel = true;
  p.offload.activation_layers = layers;
  return p;
}

bool breaks(const ParallelPlan& p, const TrainingSpec& t, RuleId rule) {
  const ModelSpec m = load_model("llama-3.1-405b");
  const auto problems = check_plan(m, t, p, test::cluster(128, "gb200-nvl72"));
  return std::any_of(problems.begin(), problems.end(),
                     [&](const RuleProblem& r) { return r.rule == rule; });
}

}  // namespace

TEST_CASE("activation_layers_problem: Megatron-Core's checks, in order") {
  const ModelSpec m = load_model("llama-3.1-405b");
  const OffloadCaps megatron = recipe_training().framework.caps.offload;
  using A = ActivationLayersProblem;
  ParallelPlan p = recipe_plan(92);
  CHECK(fewest_stage_layers(m, p) == 126);
  CHECK(activation_layers_problem(p, 126, megatron) == A::none);
  // TransformerConfig.__post_init__: fewer than num_layers.
  p.offload.activation_layers = 125;
  CHECK(activation_layers_problem(p, 126, megatron) == A::none);
  p.offload.activation_layers = 126;
  CHECK(activation_layers_problem(p, 126, megatron) == A::too_many);
  // ... no pipeline parallelism, no recompute.
  ParallelPlan q = recipe_plan(40);
  q.pp = 2;
  CHECK(activation_layers_problem(q, fewest_stage_layers(m, q), megatron) == A::with_pp);
  ParallelPlan r = recipe_plan(40);
  r.recompute = Recompute::selective;
  CHECK(activation_layers_problem(r, 126, megatron) == A::with_recompute);
  // Not with the checkpointed-input offload, not to NVMe.
  ParallelPlan both = recipe_plan(40);
  both.offload.activations = true;
  CHECK(activation_layers_problem(both, 126, megatron) == A::with_checkpoints);
  ParallelPlan nvme = recipe_plan(40);
  nvme.offload.to = OffloadTarget::nvme;
  CHECK(activation_layers_problem(nvme, 126, megatron) == A::to_nvme);
  // torchtitan, DeepSpeed and FSDP have no such offload (their profiles' sources).
  for (const char* f : {"torchtitan", "deepspeed", "fsdp"}) {
    CAPTURE(f);
    CHECK(activation_layers_problem(recipe_plan(40), 126, recipe_training(f).framework.caps.offload) ==
          A::not_supported);
  }
  // The ideal stack (no framework named) runs it with PP and recompute.
  CHECK(activation_layers_problem(q, fewest_stage_layers(m, q), OffloadCaps{}) == A::none);
}

TEST_CASE("the rule table refuses layer offload as framework_offload_layers") {
  CHECK_FALSE(breaks(recipe_plan(92), recipe_training(), RuleId::framework_offload_layers));
  CHECK(breaks(recipe_plan(126), recipe_training(), RuleId::framework_offload_layers));
  CHECK(breaks(recipe_plan(92), recipe_training("torchtitan"), RuleId::framework_offload_layers));
  ParallelPlan none = recipe_plan(0);
  CHECK_FALSE(breaks(none, recipe_training("torchtitan"), RuleId::framework_offload_layers));
  const std::vector<Rule>& rules = plan_rules();
  // In the table at its enum's place (rules appended after it keep RuleId and plan_rules() in step).
  CHECK(rules[static_cast<size_t>(RuleId::framework_offload_layers)].id ==
        RuleId::framework_offload_layers);
  CHECK(std::string(to_string(RuleId::framework_offload_layers)) == "framework_offload_layers");
}

TEST_CASE("Llama-3.1-405B on GB200 NVL72 fits with 92 layers offloaded, as the recipe runs it") {
  const ModelSpec m = load_model("llama-3.1-405b");
  const TrainingSpec t = recipe_training();
  const ClusterSpec c = test::cluster(128, "gb200-nvl72");
  const MemoryBreakdown before = estimate_memory(m, t, recipe_plan(0), c);
  const MemoryBreakdown after = estimate_memory(m, t, recipe_plan(92), c);
  CHECK_FALSE(before.fits);
  CHECK(after.fits);
  const StageMemory& b = before.worst();
  const StageMemory& a = after.worst();
  // One micro-batch in flight at pp 1: 126 layer-micro-batches, one per layer.
  REQUIRE(b.layers_in_flight == doctest::Approx(126));
  const double per_layer = b.layer_activations_bytes / 126.0;
  // 92 layers leave, less the 2 the device keeps while their copies run: 90 layers' worth.
  const double moved = 90.0 * per_layer;
  CHECK(a.offloaded_bytes == doctest::Approx(moved));
  CHECK(a.host_bytes == doctest::Approx(moved));
  CHECK(a.activations_bytes == doctest::Approx(b.activations_bytes - moved));
  CHECK(a.layer_activations_bytes == doctest::Approx(36.0 * per_layer));
  // The host of a compute tray (4 GPUs, 2 Graces, 960 GB = 894.07 GiB) holds all four GPUs'.
  CHECK(c.host.memory_bytes == doctest::Approx(894.07 * kGiB));
  CHECK(after.host_bytes_per_node == doctest::Approx(4.0 * moved));
  CHECK(after.host_fits);
  // Device memory falls by the moved bytes plus the allocator's 5% reserve on them.
  CHECK(a.total_bytes() == doctest::Approx(b.total_bytes() - 1.05 * moved));
}

TEST_CASE("offloaded layers' copies: only what outlasts one layer's pass is exposed (by hand)") {
  HostSpec h;
  h.memory_bytes = 1e12;
  h.link_bytes_per_s = 225e9;  // NVLink-C2C per GPU per direction
  h.dram_bytes_per_s = 1e12;
  h.dram_efficiency = 0.6;
  OffloadInputs in;
  in.micro_batches = 2;
  in.layer_activation_bytes = 2.25e9;  // 2.25 GB / 225 GB/s = 10 ms each way
  in.layer_forward_s = 0.006;          // 4 ms of the copy down outlasts the forward
  in.layer_backward_s = 0.012;         // the fetch hides under the backward
  Offload o;
  o.activation_layers = 3;
  const OffloadTime t = offload_time(o, h, in);
  CHECK(t.offloaded_layers == 3);
  CHECK(t.layers_down_s == doctest::Approx(2 * 3 * 0.010));
  CHECK(t.layers_up_s == doctest::Approx(2 * 3 * 0.010));
  CHECK(t.layers_exposed_s == doctest::Approx(2 * 3 * 0.004));
  CHECK(t.exposed_s == doctest::Approx(0.024));
  // Over PCIe Gen5 (63 GB/s) the same copies take 35.7 ms: 29.7 ms past the forward and
  // 23.7 ms past the backward, per layer and micro-batch.
  h.link_bytes_per_s = 63e9;
  const OffloadTime pcie = offload_time(o, h, in);
  const double one = 2.25e9 / 63e9;
  CHECK(pcie.layers_exposed_s == doctest::Approx(6 * ((one - 0.006) + (one - 0.012))));
}

TEST_CASE("the recipe's 92 layers hide behind their passes over C2C, not over a DGX H100's PCIe") {
  const ModelSpec m = load_model("llama-3.1-405b");
  const TrainingSpec t = recipe_training();
  const MemoryInputs mem = memory_inputs(m, t, recipe_plan(92));
  const double bytes = mem.activations.layer_saved[static_cast<int>(Recompute::none)];
  for (const char* cluster : {"gb200-nvl72", "dgx-h100"}) {
    CAPTURE(cluster);
    const ClusterSpec c = test::cluster(128, cluster);
    const Estimate plain = estimate(m, t, recipe_plan(0), c);
    const Estimate e = estimate(m, t, recipe_plan(92), c);
    const double link = std::string(cluster) == "gb200-nvl72" ? 225e9 : 63e9;
    REQUIRE(c.host.link_bytes_per_s == doctest::Approx(link));
    const double f = e.time.first_stage.forward_s / 126.0;
    const double b = (e.time.first_stage.input_grad_s + e.time.first_stage.weight_grad_s) / 126.0;
    const double copy = bytes / link;
    CHECK(e.time.offload.layers_down_s == doctest::Approx(92.0 * copy));
    CHECK(e.time.offload.layers_up_s == doctest::Approx(92.0 * copy));
    const double exposed = 92.0 * (std::max(0.0, copy - f) + std::max(0.0, copy - b));
    CHECK(e.time.offload.layers_exposed_s == doctest::Approx(exposed));
    CHECK(e.time.offload_s == doctest::Approx(exposed));
    CHECK(e.time.step_s == doctest::Approx(plain.time.step_s + exposed));
    if (link == 225e9) {
      // About 1.7 GiB a layer: under the layer's forward at FP8 on a GB200. Per token the
      // bf16 layer saves 12h + 4 x 1024 (GQA K, V) + 6f = 520,192 B (1.986 GiB a layer);
      // Transformer Engine keeps the QKV, MLP-up and MLP-down inputs at 1 byte, 2h + f =
      // 86,016 B less: 1.986 x 434,176 / 520,192 = 1.658 GiB.
      CHECK(bytes / kGiB == doctest::Approx(1.986 * 434176.0 / 520192.0).epsilon(0.01));
      CHECK(copy < f);
      CHECK(exposed == 0);
    } else {
      CHECK(copy > f);  // 33.9 ms over PCIe: longer than an H100's forward of the layer
      CHECK(exposed > 0.1);
    }
  }
}
