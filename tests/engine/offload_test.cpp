// Offload: the rule check, the device memory it frees, the host memory it needs, the time it adds
// (a hand-computed case) and the ladder's offload rung for Llama-3.1-8B on one H100.
#include "shardplan/offload.hpp"

#include <doctest/doctest.h>

#include "shardplan/ladder.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

ClusterSpec one_h100() {
  ClusterOptions o;
  o.gpu = "H100-SXM";
  o.gpus = 1;
  return build_cluster(o);
}

ParallelPlan zero1_offload() {
  ParallelPlan p = test::plan(1, 1, 1);
  p.zero = 1;
  p.offload.optimizer = true;
  return p;
}

}  // namespace

TEST_CASE("offload_problem: DeepSpeed's rules by default, another framework's set as a parameter") {
  const ClusterSpec c = one_h100();
  ParallelPlan p = zero1_offload();
  CHECK(offload_problem(p, c) == OffloadProblem::none);
  p.zero = 0;
  CHECK(offload_problem(p, c) == OffloadProblem::optimizer_needs_zero);
  p.zero = 1;
  p.offload.params = true;
  CHECK(offload_problem(p, c) == OffloadProblem::params_need_zero);
  p.zero = 3;
  CHECK(offload_problem(p, c) == OffloadProblem::none);
  p.offload.activations = true;
  CHECK(offload_problem(p, c) == OffloadProblem::activations_need_recompute);
  p.recompute = Recompute::full;
  CHECK(offload_problem(p, c) == OffloadProblem::none);
  p.offload.to = OffloadTarget::nvme;
  CHECK(offload_problem(p, c) == OffloadProblem::activations_to_nvme);

  // FSDP's CPUOffload: weights and optimizer together, host memory only, under sharding.
  ParallelPlan q = zero1_offload();
  CHECK(offload_problem(q, c, kFsdpOffload) == OffloadProblem::parts_together);
  q.offload.params = true;
  CHECK(offload_problem(q, c, kFsdpOffload) == OffloadProblem::optimizer_needs_zero);
  q.zero = 3;
  CHECK(offload_problem(q, c, kFsdpOffload) == OffloadProblem::none);
  q.offload.to = OffloadTarget::nvme;
  CHECK(offload_problem(q, c, kFsdpOffload) == OffloadProblem::nvme_not_supported);

  ClusterSpec bare = c;
  bare.host = HostSpec{};
  CHECK(offload_problem(zero1_offload(), bare) == OffloadProblem::no_host_facts);
  // The rule table reports it as offload_supported.
  ParallelPlan z0 = zero1_offload();
  z0.zero = 0;
  const auto problems = check_plan(load_model("llama-3.1-8b"), test::training(8192, 1), z0, c);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].rule == RuleId::offload_supported);
}

TEST_CASE("optimizer offload frees exactly the optimizer state; the host holds it and the grads") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const TrainingSpec t = test::training(8192, 1);
  const ClusterSpec c = one_h100();
  ParallelPlan plain = zero1_offload();
  plain.offload = Offload{};
  const MemoryBreakdown before = estimate_memory(m, t, plain, c);
  const MemoryBreakdown after = estimate_memory(m, t, zero1_offload(), c);
  const double params = before.total_params;
  // Mixed-precision AdamW: fp32 master + momentum + variance = 12 B/param (ZeRO Sec. 3.1).
  CHECK(before.worst().optimizer_bytes == doctest::Approx(12.0 * params));
  CHECK(after.worst().optimizer_bytes == 0);
  CHECK(after.worst().offloaded_bytes == doctest::Approx(12.0 * params));
  CHECK(before.total_bytes() - after.total_bytes() == doctest::Approx(12.0 * params));
  CHECK(after.worst().host_bytes == doctest::Approx((12.0 + kHostGradientBytesPerParam) * params));
  CHECK_FALSE(before.fits);  // 12 B x 8.03e9 = 96 GB of state alone
  CHECK(after.fits);
  CHECK(after.host_capacity_bytes == doctest::Approx(2048.0 * 1024 * 1024 * 1024));  // DGX H100
}

TEST_CASE("a plan whose host need exceeds the node's host memory does not fit") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const TrainingSpec t = test::training(8192, 1);
  ClusterSpec c = one_h100();
  c.host.memory_bytes = 64.0 * 1024 * 1024 * 1024;  // 16 B x 8.03e9 = 128 GB needed
  const MemoryBreakdown mem = estimate_memory(m, t, zero1_offload(), c);
  CHECK(mem.total_bytes() <= mem.capacity_bytes);  // the device alone would fit
  CHECK_FALSE(mem.host_fits);
  CHECK_FALSE(mem.fits);
  CHECK(mem.host_bytes_per_node > c.host.memory_bytes);
  // Eight GPUs of a node share one host: eight times the per-GPU need.
  ClusterSpec node = c;
  node.gpus = node.gpus_per_node = 8;
  ParallelPlan p8 = zero1_offload();
  p8.dp = 8;
  const MemoryBreakdown eight = estimate_memory(m, test::training(8192, 8), p8, node);
  CHECK(eight.host_bytes_per_node == doctest::Approx(8 * eight.worst().host_bytes));
}

TEST_CASE("offload time on a hand-computed case") {
  HostSpec h;
  h.memory_bytes = 1e12;
  h.link_bytes_per_s = 50e9;
  h.dram_bytes_per_s = 600e9;
  h.dram_efficiency = 0.5;
  h.nvme_bytes_per_s = 20e9;
  OffloadInputs in;
  in.shard_params = 1e9;
  in.weight_bytes_per_param = 2;
  in.gradient_bytes_per_param = 2;
  in.optimizer_bytes_per_param = 12;
  in.compute_s = 0.01;  // shorter than the gradient copy: 0.03 s of it stays exposed
  Offload o;
  o.optimizer = true;
  const OffloadTime t = offload_time(o, h, in);
  CHECK(t.gradients_down_s == doctest::Approx(0.04));  // 1e9 x 2 B / 50 GB/s
  CHECK(t.weights_up_s == doctest::Approx(0.04));
  CHECK(t.cpu_adam_s == doctest::Approx(0.1));  // 1e9 x 30 B / (600 GB/s x 0.5)
  CHECK(t.hidden_s == doctest::Approx(0.01));
  CHECK(t.exposed_s == doctest::Approx(0.03 + 0.04 + 0.1));
  // On NVMe the states are read and written once per step: 2 x 12 GB / 20 GB/s.
  o.to = OffloadTarget::nvme;
  const OffloadTime nv = offload_time(o, h, in);
  CHECK(nv.nvme_s == doctest::Approx(1.2));
  CHECK(nv.exposed_s == doctest::Approx(t.exposed_s + 1.2));
}

TEST_CASE("the estimate adds the offload time and drops the GPU optimizer step") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const TrainingSpec t = test::training(8192, 1);
  const ClusterSpec c = one_h100();
  ParallelPlan plain = zero1_offload();
  plain.offload = Offload{};
  const Estimate a = estimate(m, t, plain, c);
  const Estimate b = estimate(m, t, zero1_offload(), c);
  const double n = a.memory.total_params;
  const double adam = n * kCpuAdamBytesPerParam / (c.host.dram_bytes_per_s * 0.6);
  const double up = n * 2.0 / c.host.link_bytes_per_s;
  CHECK(b.time.offload.cpu_adam_s == doctest::Approx(adam));
  CHECK(b.time.offload_s == doctest::Approx(adam + up));  // gradient copy hides under backward
  CHECK(b.time.offload_s > 0);
  CHECK(b.time.optimizer_s == 0);
  CHECK(b.time.step_s == doctest::Approx(a.time.step_s - a.time.optimizer_s + b.time.offload_s));
}

TEST_CASE("llama-3.1-8b on one H100: the ladder stops at offload") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const LadderResult l = walk_ladder(m, test::training(8192, 1), one_h100());
  REQUIRE(l.stop >= 0);
  const RungVerdict& v = l.rungs[static_cast<size_t>(l.stop)];
  CHECK(v.rung == Rung::offload);
  CHECK(v.plan.plan.offload.optimizer);
  CHECK(v.offload_s > 0);
  CHECK(v.without_offload_bytes > v.capacity_bytes);
  REQUIRE(l.rungs.size() == 3);
  CHECK(l.rungs[0].blocker == Blocker::optimizer_state);
}

TEST_CASE("the offload rung is for one GPU: eight GPUs go to ZeRO") {
  ClusterOptions o;
  o.gpu = "H100-SXM";
  o.gpus = 8;
  const LadderResult l =
      walk_ladder(load_model("llama-3.1-8b"), test::training(8192, 8), build_cluster(o));
  for (const RungVerdict& v : l.rungs) CHECK(v.rung != Rung::offload);
}

TEST_CASE("a probe's measured host figures price the offload in place of the datasheet's") {
  HostSpec h;
  h.memory_bytes = 1e12;
  h.link_bytes_per_s = 50e9;
  h.dram_bytes_per_s = 600e9;
  h.dram_efficiency = 0.5;
  OffloadInputs in;
  in.shard_params = 1e9;
  Offload o;
  o.optimizer = true;
  const OffloadTime sheet = offload_time(o, h, in);
  CHECK_FALSE(sheet.link_measured);
  CHECK_FALSE(sheet.dram_measured);
  h.measured_h2d_bytes_per_s = 40e9;    // weights up
  h.measured_d2h_bytes_per_s = 25e9;    // gradients down
  h.measured_dram_bytes_per_s = 200e9;  // STREAM Triad of the node
  const OffloadTime probed = offload_time(o, h, in);
  CHECK(probed.link_measured);
  CHECK(probed.dram_measured);
  CHECK(probed.gradients_down_s == doctest::Approx(0.08));  // 1e9 x 2 B / 25 GB/s
  CHECK(probed.weights_up_s == doctest::Approx(0.05));      // 1e9 x 2 B / 40 GB/s
  CHECK(probed.cpu_adam_s == doctest::Approx(0.15));        // 1e9 x 30 B / 200 GB/s
  // A probe of a host with no preset facts: figures, but no memory size, so no offload.
  HostSpec only;
  only.measured_h2d_bytes_per_s = only.measured_d2h_bytes_per_s = 25e9;
  only.measured_dram_bytes_per_s = 200e9;
  CHECK_FALSE(only.known());
}

TEST_CASE("DeepSpeed moves gradients off with the optimizer, keeping one reduce bucket") {
  const FrameworkProfile ds = load_framework(Framework::deepspeed);
  // DeepSpeed's default reduce_bucket_size (deepspeed/runtime/zero/config.py): 5e8 elements.
  CHECK(ds.caps.offload.gradients_with_optimizer);
  CHECK(ds.caps.offload.gradient_bucket_elements == 5e8);
  CHECK(load_framework(Framework::fsdp).caps.offload.gradients_with_optimizer);
  CHECK_FALSE(load_framework(Framework::megatron).caps.offload.gradients_with_optimizer);

  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 1);
  const ClusterSpec c = one_h100();
  const MemoryBreakdown kept = estimate_memory(m, t, zero1_offload(), c);  // no framework: stay
  t.framework = ds;
  const MemoryBreakdown moved = estimate_memory(m, t, zero1_offload(), c);
  const double params = kept.total_params;
  // bf16 gradients: 2 B/param on the device, or one 5e8-element bucket of them.
  CHECK(kept.worst().gradients_bytes == doctest::Approx(2.0 * params));
  CHECK(moved.worst().gradients_bytes == doctest::Approx(2.0 * 5e8));
  CHECK(moved.worst().offloaded_bytes == doctest::Approx(12.0 * params + 2.0 * (params - 5e8)));
  // The host already holds the fp32 gradient CPU Adam reads: no second copy.
  CHECK(moved.worst().host_bytes == doctest::Approx(kept.worst().host_bytes));
  CHECK(kept.total_bytes() - moved.total_bytes() == doctest::Approx(2.0 * (params - 5e8)));
}
