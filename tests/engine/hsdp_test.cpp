// Hybrid sharding (HSDP: ZeRO inside a shard group, replicas across groups), the deferred
// gradient sync and FSDP's kept-gathered weights, against hand computations: the sharded state
// divided by the shard degree, the collectives on the group each one runs on and how often they
// run, the rule table, and the search choosing HSDP where the arithmetic of a slow network says
// it is faster.
#include <doctest/doctest.h>

#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_simulation.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// Llama 3.1 8B: 8,030,261,248 parameters (Meta's model card, "8B"; the preset counts the same).
constexpr double kLlama8b = 8030261248.0;

// Two DGX H100 nodes joined by one 25GbE NIC each (2.9 GB/s busbw, profiles/links/25gbe.json):
// 8 GPUs per NVLink domain, each GPU's share of the network 2.9 / 8 GB/s.
ClusterSpec two_nodes_25gbe() {
  ClusterOptions o;
  o.cluster = "dgx-h100";
  o.gpus = 16;
  o.inter = "25gbe";
  return build_cluster(o);
}

ParallelPlan fsdp16(int dp_shard) {
  ParallelPlan p = test::plan(16, 1, 1);
  p.zero = 3;
  p.dp_shard = dp_shard;
  return p;
}

}  // namespace

TEST_CASE("HSDP memory: llama-3.1-8b on 16 GPUs, shard 8 x replicate 2, divides by 8") {
  // bf16 weights 2 B, bf16 gradients 2 B, fp32 master + two moments 12 B per parameter (ZeRO
  // paper Sec. 3.1): under ZeRO-3 each divides by the ranks it is sharded over, 8 here, not 16.
  const ModelSpec m = load_model("llama-3.1-8b");
  REQUIRE(count_params(m).total == doctest::Approx(kLlama8b));
  const TrainingSpec t = test::training(8192, 32);
  const ClusterSpec c = two_nodes_25gbe();
  const StageMemory hsdp = estimate_memory(m, t, fsdp16(8), c).worst();
  CHECK(hsdp.weights_bytes == doctest::Approx(2.0 * kLlama8b / 8));
  CHECK(hsdp.gradients_bytes == doctest::Approx(2.0 * kLlama8b / 8));
  CHECK(hsdp.optimizer_bytes == doctest::Approx(12.0 * kLlama8b / 8));
  CHECK(hsdp.model_states_bytes() == doctest::Approx(16.0 * kLlama8b / 8));  // 16.06 GB
  const StageMemory full = estimate_memory(m, t, fsdp16(0), c).worst();
  CHECK(full.model_states_bytes() == doctest::Approx(16.0 * kLlama8b / 16));  // 8.03 GB
  // One more NCCL communicator: the replicate group beside the shard group.
  CHECK(hsdp.nccl_communicators == full.nccl_communicators + 1);
  // ZeRO-1 shards only the optimizer: 12 B / 8 of it, weights and gradients whole.
  ParallelPlan z1 = fsdp16(8);
  z1.zero = 1;
  const StageMemory one = estimate_memory(m, t, z1, c).worst();
  CHECK(one.optimizer_bytes == doctest::Approx(12.0 * kLlama8b / 8));
  CHECK(one.weights_bytes == doctest::Approx(2.0 * kLlama8b));
}

TEST_CASE("HSDP traffic: gathers and reduce-scatters in the shard group, the shard's all-reduce "
          "across replicas") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const TrainingSpec t = test::training(8192, 32);  // 32 / 16 = 2 micro-batches per step
  const ClusterSpec c = two_nodes_25gbe();
  const Estimate e = estimate(m, t, fsdp16(8), c, Simulation::skip);
  // 32 layers + the embedding + the LM head: 34 FSDP units of N / 34 parameters each.
  const double units = 34, unit_bytes = 2.0 * kLlama8b / units;
  const Traffic& ag = e.comm.dp_params;
  CHECK(ag.collective == Collective::all_gather);
  CHECK(ag.placement.ranks == 8);
  CHECK(ag.placement.domains() == 1);  // inside one NVLink domain
  CHECK(ag.bytes == doctest::Approx(unit_bytes));
  CHECK(ag.calls == 2 * units * 2);  // forward and backward, both micro-batches
  const Traffic& rs = e.comm.dp_grads;
  CHECK(rs.collective == Collective::reduce_scatter);
  CHECK(rs.placement.ranks == 8);
  CHECK(rs.calls == units * 2);
  const Traffic& ar = e.comm.dp_replicate;
  CHECK(ar.collective == Collective::all_reduce);
  CHECK(ar.placement.ranks == 2);
  CHECK(ar.placement.domains() == 2);  // across the two nodes
  CHECK(ar.bytes == doctest::Approx(unit_bytes / 8));  // the reduced shard
  CHECK(ar.calls == units * 2);
  // Wire bytes: all-reduce bus factor 2(n-1)/n = 1 for n = 2 (nccl-tests PERFORMANCE.md).
  CHECK(ar.wire_bytes == doctest::Approx(ar.calls * unit_bytes / 8));
  // Full sharding has no replicas and runs every collective over all 16 ranks.
  const Estimate f = estimate(m, t, fsdp16(0), c, Simulation::skip);
  CHECK_FALSE(f.comm.dp_replicate.present());
  CHECK(f.comm.dp_params.placement.ranks == 16);
  CHECK(f.comm.dp_params.placement.domains() == 2);
}

TEST_CASE("HSDP's network time by hand: a third of full sharding's on 25GbE") {
  // Ideal stack (every busbw share 1). Full sharding: each unit's 2 gathers and 1 reduce-scatter
  // cross the network in a ring of 16 with 8 GPUs per node, busbw min(NVLink, 8 x 2.9 / 8) =
  // 2.9 GB/s, moving S x 15/16 each. HSDP: per unit one all-reduce of S / 8 over 2 ranks, one
  // per node, at one GPU's share 2.9 / 8 GB/s, bus factor 1. Ratio (latency aside):
  // 3 x (15/16) / 2.9 over (1/8) / (2.9/8) = 3 x 15/16 = 2.8125.
  const ModelSpec m = load_model("llama-3.1-8b");
  const TrainingSpec t = test::training(8192, 32);
  const ClusterSpec c = two_nodes_25gbe();
  const Estimate f = estimate(m, t, fsdp16(0), c, Simulation::skip);
  const Estimate h = estimate(m, t, fsdp16(8), c, Simulation::skip);
  const double full_net = f.comm.dp_params.time_s + f.comm.dp_grads.time_s;
  CHECK(full_net / h.comm.dp_replicate.time_s == doctest::Approx(2.8125).epsilon(0.01));
  CHECK(h.time.step_s < f.time.step_s);
}

TEST_CASE("--grad-sync deferred: one reduce-scatter per step instead of one per micro-batch") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 64);  // 4 micro-batches per step
  const ClusterSpec c = two_nodes_25gbe();
  t.grad_sync = GradSync::every_micro_batch;
  const Estimate every = estimate(m, t, fsdp16(8), c, Simulation::skip);
  t.grad_sync = GradSync::deferred;
  const Estimate once = estimate(m, t, fsdp16(8), c, Simulation::skip);
  CHECK(every.comm.dp_grads.calls == 34 * 4);
  CHECK(once.comm.dp_grads.calls == 34);
  CHECK(once.comm.dp_replicate.calls == 34);
  CHECK(once.comm.dp_params.calls == every.comm.dp_params.calls);  // gathers as before
  CHECK(once.comm.dp_replicate.time_s == doctest::Approx(every.comm.dp_replicate.time_s / 4));
  // The step is shorter (three fewer rounds of the network's all-reduces) ...
  CHECK(once.time.step_s < every.time.step_s);
  // ... and so is the simulated one, whose deferring backwards issue no reductions.
  const Estimate once_sim = estimate(m, t, fsdp16(8), c, Simulation::run);
  t.grad_sync = GradSync::every_micro_batch;
  const Estimate every_sim = estimate(m, t, fsdp16(8), c, Simulation::run);
  REQUIRE(once_sim.step_simulated);
  REQUIRE(every_sim.step_simulated);
  CHECK(once_sim.step_s < every_sim.step_s);
}

namespace {

// The simulated step's weight gathers on pipeline rank `device`.
int simulated_gathers(const ModelSpec& m, const TrainingSpec& t, const ParallelPlan& p,
                      const ClusterSpec& c, const Estimate& e, int device) {
  const SimulatedStep sim = simulate_step(m, t, p, c, e.time, e.comm, true);
  int n = 0;
  for (const SimEvent& ev : sim.result.events)
    n += ev.kind == SimTaskKind::param_gather && ev.device == device ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("FSDP2 under pipeline stages gathers each unit once per step, not per micro-batch") {
  // torchtitan keeps a stage's weights gathered from forward to backward under pipelining
  // (parallelize.py apply_fsdp: reshard_after_forward = not pp_enabled), and
  // torch.distributed.pipelining's backward_maybe_with_nosync sets
  // set_reshard_after_backward(False) with set_requires_gradient_sync(False) until the last
  // backward: the first forward gathers, nothing gathers again, the last backward
  // reduce-scatters. Llama 3.1 8B on dp 4 x pp 2, 16 sequences: 4 micro-batches; each stage has
  // 16 layers and the embedding (or the LM head): 17 FSDP units.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 16);
  t.framework = load_framework(Framework::torchtitan);
  ParallelPlan p = test::plan(4, 1, 2);
  p.zero = 3;
  const ClusterSpec c = test::cluster(8);
  const double units = 17, micro_batches = 4;
  const Estimate once = estimate(m, t, p, c, Simulation::skip);
  CHECK(once.comm.dp_params.calls == units);
  CHECK(once.comm.dp_grads.calls == units);
  CHECK(simulated_gathers(m, t, p, c, once, 0) == units);
  // Synced every micro-batch, FSDP2 reshards after each backward (its default), so each
  // forward gathers again; the backward still finds its weights gathered.
  t.grad_sync = GradSync::every_micro_batch;
  const Estimate every = estimate(m, t, p, c, Simulation::skip);
  CHECK(every.comm.dp_params.calls == units * micro_batches);
  CHECK(every.comm.dp_grads.calls == units * micro_batches);
  CHECK(simulated_gathers(m, t, p, c, every, 0) == units * micro_batches);
  CHECK(once.time.step_s < every.time.step_s);
  // Megatron's ZeRO-3 pricing keeps nothing gathered: forward and backward of every micro-batch.
  t.grad_sync = GradSync::framework;
  t.framework = load_framework(Framework::megatron);
  const Estimate meg = estimate(m, t, p, c, Simulation::skip);
  CHECK(meg.comm.dp_params.calls == 2 * units * micro_batches);
  CHECK(simulated_gathers(m, t, p, c, meg, 0) == 2 * units * micro_batches);
}

TEST_CASE("the rule table: HSDP needs a framework that runs it, ZeRO 1-3 and a divisor of dp") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 32);
  const ClusterSpec c = two_nodes_25gbe();
  auto broken = [&](const ParallelPlan& p) {
    std::vector<RuleId> out;
    for (const RuleProblem& r : check_plan(m, t, p, c)) out.push_back(r.rule);
    return out;
  };
  t.framework = load_framework(Framework::torchtitan);
  CHECK(broken(fsdp16(8)).empty());
  t.framework = load_framework(Framework::fsdp);
  CHECK(broken(fsdp16(8)).empty());
  for (Framework f : {Framework::megatron, Framework::deepspeed}) {
    t.framework = load_framework(f);
    CHECK(broken(fsdp16(8)) == std::vector<RuleId>{RuleId::framework_hsdp});
  }
  t.framework = load_framework(Framework::torchtitan);
  for (int bad : {1, 3, 16}) CHECK(broken(fsdp16(bad)) == std::vector<RuleId>{RuleId::dp_shard_divides});
  ParallelPlan z0 = fsdp16(8);
  z0.zero = 0;  // nothing sharded; torchtitan has no ZeRO-1 either
  CHECK(broken(z0) == std::vector<RuleId>{RuleId::dp_shard_divides});
}

TEST_CASE("plan searches the shard degree and finds HSDP faster on a 2-node 25GbE cluster") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 32);
  t.framework = load_framework(Framework::torchtitan);
  const ClusterSpec c = two_nodes_25gbe();
  SearchSpace s = full_space(m, t, c);
  CHECK(s.shard_gpus == std::vector<int>{0, 8});  // full dp, and the node (= NVLink domain)
  // FSDP alone (tp 1, pp 1, ZeRO-3) so that the comparison is the one worked by hand above.
  s.tp = {1};
  s.pp = {1};
  s.cp = {1};
  s.zero = {3};
  s.micro_batch = {1};
  s.interleave = {1};
  s.sequence_parallel = {false};
  s.schedule = {Schedule::one_f_one_b};
  s.lighter_ends = {false};
  const SearchResult r = search(m, t, c, s, {});
  REQUIRE_FALSE(r.ranked.empty());
  CHECK(r.ranked.front().plan.dp_shard == 8);
  // DeepSpeed runs no HSDP: the axis is taken out before the walk, counted under the rule.
  t.framework = load_framework(Framework::deepspeed);
  const SearchSpace ds = full_space(m, t, c);
  CHECK(ds.shard_gpus == std::vector<int>{0});
  CHECK(ds.refused[static_cast<int>(RuleId::framework_hsdp)] > 0);
  // Megatron-Core runs it at ZeRO-1 (distributed-optimizer instances): the axis stays.
  t.framework = load_framework(Framework::megatron);
  CHECK(full_space(m, t, c).shard_gpus == std::vector<int>{0, 8});
}

TEST_CASE("HSDP of a mixture of experts: experts shard inside the shard group, replicas all-reduce "
          "their part") {
  // torchtitan's mesh with EP (parallel_dims.py _build_mesh_with_ep): [dp_replicate,
  // dp_shard_mod_ep, dp_shard_in_ep, cp, tp]; the expert group is borrowed from dp_shard x cp
  // and the experts are FSDP-sharded over dp_shard_mod_ep = dp_shard x cp / ep. Qwen3-30B-A3B
  // on 16 GPUs, shard 8 x replicate 2, ep 4: each expert is sharded over 8 / 4 = 2 ranks.
  const ModelSpec m = load_model("qwen3-30b-a3b");
  TrainingSpec t = test::training(4096, 32);
  t.framework = load_framework(Framework::torchtitan);
  const ClusterSpec c = two_nodes_25gbe();
  ParallelPlan p = fsdp16(8);
  p.ep = 4;
  CHECK(check_plan(m, t, p, c).empty());
  // An expert group of 16 cannot lie inside a shard group of 8 (torchtitan asserts ep divides
  // dp_shard x cp).
  ParallelPlan wide = p;
  wide.ep = 16;
  bool refused = false;
  for (const RuleProblem& r : check_plan(m, t, wide, c))
    refused = refused || r.rule == RuleId::dp_shard_divides;
  CHECK(refused);

  // Memory: dense states / 8, the rank's 128 / 4 = 32 experts' states / 2.
  const DeviceParams dev = device_params(m, p, 0);
  REQUIRE(dev.experts > 0);
  const MemoryInputs in = memory_inputs(m, t, p);
  const StageMemory s = estimate_memory(m, t, p, c).stages[0];
  CHECK(s.optimizer_bytes ==
        doctest::Approx(in.per_param.optimizer * (dev.dense / 8 + dev.experts / 2)));

  // Traffic: the replica all-reduce of each unit carries the dense 1/8 and the experts' 1/2.
  const Estimate e = estimate(m, t, p, c, Simulation::skip);
  const double units = m.layers + 2.0;  // the layers, the embedding and the LM head
  const Traffic& ar = e.comm.dp_replicate;
  REQUIRE(ar.present());
  CHECK(ar.placement.ranks == 2);
  CHECK(ar.bytes ==
        doctest::Approx((dev.dense / units / 8 + dev.experts / units / 2) * in.per_param.gradients));
}
