// Mixture-of-experts execution: the expert all-to-alls by dispatcher, dtype and node-limited
// routing, what paired passes hide, grouped expert GEMMs and the max-load factor. Every
// expected value is worked out by hand from the formulas' sources (moe.hpp, compute.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "shardplan/comm.hpp"
#include "shardplan/compute.hpp"
#include "shardplan/layer.hpp"
#include "shardplan/model.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// DeepSeek-V3's published layout: EP 64 over 8 nodes of 8 H800s (report Sec. 3.2).
struct DeepSeekEp {
  ModelSpec model = load_model("deepseek-v3");
  ClusterSpec cluster = test::cluster(2048, "h800-deepseek");
  Placement group{64, 8, 8};
  TrainingSpec training = test::training(4096, 15360);
  double tokens = 4096;               // one micro-batch of one sequence
  double visits = 4096.0 * 8;         // top-8
  double inter_bw() const { return cluster.inter.busbw_bytes_per_s; }
  double intra_bw() const { return cluster.intra.busbw_bytes_per_s; }
  double latency() const {
    return cluster.inter.latency_s * (group.ranks - 1);  // all-to-all: n - 1 steps
  }
};

}  // namespace

TEST_CASE("plain all-to-all: every (token, expert) pair on another domain crosses the NICs") {
  DeepSeekEp f;
  const ExpertTraffic t = expert_traffic(f.model, f.training, f.group, f.cluster, f.tokens, f.visits);
  // bf16: 32,768 visits x 7,168 wide x 2 B, the same both ways.
  CHECK(t.dispatch_bytes == doctest::Approx(32768.0 * 7168 * 2));
  CHECK(t.combine_bytes == doctest::Approx(t.dispatch_bytes));
  // 56 of 64 ranks are on other nodes: 7 of a token's 8 visits leave its node.
  CHECK(t.remote_copies_per_token == doctest::Approx(7.0));
  CHECK(t.domain_limit == 0);
  CHECK(t.dispatch_s ==
        doctest::Approx(collective_time(Collective::all_to_all, t.dispatch_bytes, f.group, f.cluster)));
}

TEST_CASE("DeepEP with node-limited routing: at most 4 nodes per token, fp8 dispatch") {
  DeepSeekEp f;
  f.training.moe_dispatcher = MoeDispatcher::deepep;
  f.training.moe_fp8_dispatch = true;
  const ExpertTraffic t = expert_traffic(f.model, f.training, f.group, f.cluster, f.tokens, f.visits);
  // n_group 8, topk_group 4 on 8 nodes: a token reaches at most 4 of them (report Sec. 3.2.2).
  CHECK(t.domain_limit == 4);
  // 8 experts over 8 nodes would touch 8 (1 - (7/8)^8) = 5.25 nodes; the limit keeps 4, of
  // which 7/8 on average are another node: 3.5 copies over InfiniBand instead of 7.
  CHECK(t.remote_copies_per_token == doctest::Approx(3.5));
  // fp8 with one fp32 scale per 128 elements: 1.03125 B per element out, bf16 back.
  const double de = 1.0 + 4.0 / 128.0;
  CHECK(t.dispatch_bytes == doctest::Approx(32768.0 * 7168 * de));
  const double across = 4096.0 * 3.5 * 7168;
  const double inside = 32768.0 * 7168 * 7.0 / 8.0;
  const double expect_dispatch =
      f.latency() + std::max(across * de / f.inter_bw(), inside * de / f.intra_bw());
  const double expect_combine =
      f.latency() + std::max(across * 2 / f.inter_bw(), inside * 2 / f.intra_bw());
  CHECK(t.dispatch_s == doctest::Approx(expect_dispatch));
  CHECK(t.combine_s == doctest::Approx(expect_combine));
  // Against the plain dispatcher in bf16: 7 copies x 2 B each way, so well under half.
  DeepSeekEp plain;
  const ExpertTraffic p =
      expert_traffic(plain.model, plain.training, plain.group, plain.cluster, plain.tokens, plain.visits);
  CHECK(t.layer_s() < 0.5 * p.layer_s());
}

TEST_CASE("an expert group inside one node moves the same bytes with either dispatcher") {
  DeepSeekEp f;
  const Placement node{8, 8, 8};
  const ExpertTraffic plain = expert_traffic(f.model, f.training, node, f.cluster, f.tokens, f.visits);
  f.training.moe_dispatcher = MoeDispatcher::deepep;
  const ExpertTraffic deepep = expert_traffic(f.model, f.training, node, f.cluster, f.tokens, f.visits);
  CHECK(deepep.layer_s() == doctest::Approx(plain.layer_s()));
  CHECK(plain.remote_copies_per_token == 0);
}

TEST_CASE("paired passes: the warm-up forwards run alone, the rest hide behind each other") {
  ParallelPlan p;
  CHECK(paired_share(p, 8) == 0);  // not asked for
  p.moe_a2a_overlap = true;
  // No pipeline: micro-batch i+1's forward beside micro-batch i's backward, all but the first.
  CHECK(paired_share(p, 8) == doctest::Approx(7.0 / 8.0));
  // PP 16, 120 micro-batches: stage 0's 15 warm-up forwards alone.
  p.pp = 16;
  CHECK(paired_share(p, 120) == doctest::Approx(105.0 / 120.0));
  CHECK(paired_share(p, 10) == 0);
  // DualPipe-V's chunks pair only with the switch (torchtitan's
  // pipeline_parallel_expert_parallel_overlap).
  ParallelPlan v;
  v.pp = 16;
  v.schedule = Schedule::dualpipe_v;
  CHECK(paired_share(v, 120) == 0);
  v.moe_a2a_overlap = true;
  CHECK(paired_share(v, 120) == doctest::Approx(105.0 / 120.0));
  // 10 s of all-to-all beside 8 s of compute: 1/8 of it alone (1.25 s) and 7/8 of the 2 s
  // the compute cannot cover (1.75 s).
  p.pp = 1;
  CHECK(exposed_all_to_all_s(p, 8, 10.0, 8.0) == doctest::Approx(1.25 + 1.75));
  CHECK(exposed_all_to_all_s(p, 8, 4.0, 8.0) == doctest::Approx(0.5));
}

TEST_CASE("grouped expert GEMMs reach the efficiency of one expert's GEMM, not the launch's") {
  const GpuSpec gpu = load_gpu("H100-SXM");
  Op op;
  op.kind = OpKind::gemm;
  op.m = 1024;
  op.n = 4096;
  op.k = 7168;
  op.batch = 32;
  op.flops = 2.0 * op.m * op.n * op.k * op.batch;
  op.bytes = 2.0 * op.batch * (op.m * op.k + op.k * op.n + op.m * op.n);
  const double whole = op_forward_s(op, gpu, MathDtype::bf16);
  op.grouped = true;
  const double grouped = op_forward_s(op, gpu, MathDtype::bf16);
  const double peak = peak_flops(gpu, MathDtype::bf16);
  // Either way the 32 x 8 x 16 = 4096 output tiles share the H100's 132 SMs in 32 waves.
  REQUIRE(gpu.sm_count == 132);  // NVIDIA H100 whitepaper, Table 3: H100 SXM5
  const double waves = test::tile_wave_share(op.m, op.n, op.batch, 132);
  CHECK(waves == doctest::Approx(4096.0 / (32 * 132)));
  CHECK(whole == doctest::Approx(op.flops / (peak * gemm_efficiency(gpu, op.flops) * waves)));
  CHECK(grouped ==
        doctest::Approx(op.flops / (peak * gemm_efficiency(gpu, op.flops / 32) * waves)));
  CHECK(grouped > whole);
}

TEST_CASE("a max-load factor makes the busiest expert rank's GEMMs and all-to-alls longer") {
  const ModelSpec m = load_model("mixtral-8x7b");
  TrainingSpec tr = test::training(4096, 64);
  ParallelPlan p = test::plan(8, 1, 1);
  p.ep = 8;
  const MicroBatchWork even = describe_micro_batch(m, tr, p);
  tr.moe_max_load = 1.5;
  const MicroBatchWork busy = describe_micro_batch(m, tr, p);
  CHECK(busy.layer.expert_visits == doctest::Approx(1.5 * even.layer.expert_visits));
  for (size_t i = 0; i < even.layer.ops.size(); ++i) {
    if (!even.layer.ops[i].grouped) continue;
    CAPTURE(even.layer.ops[i].name);
    CHECK(busy.layer.ops[i].flops == doctest::Approx(1.5 * even.layer.ops[i].flops));
  }
  // Mixtral with ep 8: one expert per rank (batch 1), so its GEMMs are plain ones.
  p.ep = 2;
  bool grouped = false;
  for (const Op& op : describe_micro_batch(m, tr, p).layer.ops) grouped = grouped || op.grouped;
  CHECK(grouped);
}

TEST_CASE("each TP rank routes its sequence-parallel share; expert TP gathers its members' tokens") {
  // DeepSeek-V3 as Megatron-Bridge's 25.09 table ran it on H100s: TP 2 with sequence parallel,
  // EP 64, expert TP 1, one sequence of 4,096 per micro-batch (docs/moe.md).
  const ModelSpec m = load_model("deepseek-v3");
  const TrainingSpec tr = test::training(4096, 8192);
  const ClusterSpec c = test::cluster(1024, "dgx-h100");
  ParallelPlan p = test::plan(64, 2, 8);
  p.sequence_parallel = true;
  p.ep = 64;
  p.etp = 1;
  const MicroBatchWork w = describe_micro_batch(m, tr, p);
  // Each of the two TP ranks routes 2,048 tokens to top-8 experts.
  CHECK(w.layer.expert_tokens == doctest::Approx(2048.0));
  CHECK(w.layer.expert_visits == doctest::Approx(2048.0 * 8));
  CHECK(w.layer.expert_gather == doctest::Approx(1.0));
  // 2,048 x 8 visits x 7,168 wide x 2 B per dispatch: 234.9 MB, not 469.8 MB.
  const MicroBatchCost cost = micro_batch_cost(m, tr, p, c);
  CHECK(cost.ep.dispatch_bytes == doctest::Approx(2048.0 * 8 * 7168 * 2));
  CHECK(cost.ep.expert_tp_s == 0.0);
  // The router GEMM runs on the routed tokens; the experts' GEMMs on the 16,384 visits a rank
  // receives, spread over its 256 / 64 = 4 local experts.
  for (const Op& op : w.layer.ops) {
    CAPTURE(op.name);
    if (std::string(op.name) == "router") CHECK(op.m == doctest::Approx(2048.0));
    if (op.grouped) CHECK(op.m * op.batch == doctest::Approx(2048.0 * 8));
  }
  // Expert TP 2 (Megatron-Core's default, = tp): the pair gathers both ranks' visits, each rank
  // runs all 32,768 through half of every expert, and the gather is priced with the all-to-all.
  p.etp = 0;
  const MicroBatchWork g = describe_micro_batch(m, tr, p);
  CHECK(g.layer.expert_visits == doctest::Approx(2048.0 * 8));
  CHECK(g.layer.expert_gather == doctest::Approx(2.0));
  for (const Op& op : g.layer.ops) {
    if (op.grouped) CHECK(op.m * op.batch == doctest::Approx(4096.0 * 8));
  }
  const MicroBatchCost gathered = micro_batch_cost(m, tr, p, c);
  const Placement pair = expert_tp_placement(p, c);
  CHECK(pair.ranks == 2);
  CHECK(pair.ranks_per_host == 2);
  const double bytes = 4096.0 * 8 * 7168 * 2;
  CHECK(gathered.ep.expert_tp_s ==
        doctest::Approx(collective_time(Collective::all_gather, bytes, pair, c) +
                        collective_time(Collective::reduce_scatter, bytes, pair, c)));
  CHECK(gathered.collectives.ep_s ==
        doctest::Approx(gathered.ep.dispatch_s + gathered.ep.combine_s + gathered.ep.expert_tp_s));
}

TEST_CASE("the rule table: overlap needs EP and a framework that runs it; dispatchers by name") {
  const ModelSpec m = load_model("mixtral-8x7b");
  TrainingSpec tr = test::training(4096, 64);
  const ClusterSpec c = test::cluster(8, "dgx-h100");
  auto broken = [&](const ParallelPlan& p, const TrainingSpec& t, RuleId id) {
    for (const RuleProblem& r : check_plan(m, t, p, c, {})) {
      if (r.rule == id) return true;
    }
    return false;
  };
  ParallelPlan p = test::plan(8, 1, 1);
  p.moe_a2a_overlap = true;
  CHECK(broken(p, tr, RuleId::moe_overlap_needs_ep));
  p.ep = 8;
  CHECK_FALSE(broken(p, tr, RuleId::moe_overlap_needs_ep));
  tr.framework = load_framework(Framework::megatron);
  CHECK_FALSE(broken(p, tr, RuleId::framework_moe_overlap));
  tr.framework = load_framework(Framework::torchtitan);
  CHECK(broken(p, tr, RuleId::framework_moe_overlap));  // torchtitan: on DualPipeV only
  ParallelPlan dualpipe = test::plan(4, 1, 2);
  dualpipe.ep = 4;
  dualpipe.interleave = 2;
  dualpipe.schedule = Schedule::dualpipe_v;
  dualpipe.moe_a2a_overlap = true;
  CHECK_FALSE(broken(dualpipe, tr, RuleId::framework_moe_overlap));
  tr.moe_dispatcher = MoeDispatcher::deepep;
  CHECK(broken(p, tr, RuleId::framework_moe_dispatcher));
  tr.framework = load_framework(Framework::megatron);
  CHECK_FALSE(broken(p, tr, RuleId::framework_moe_dispatcher));
}

TEST_CASE("ZeRO-3 gathers a MoE model's experts too, over the expert-data-parallel group") {
  // Mixtral 8x7B on 8 H100s, ZeRO-3, no EP: each unit's gather is its dense share over the 8
  // data-parallel ranks and its expert share over the same 8 (the expert-data group is the data
  // group without EP). Before the experts were counted, only the first term was priced.
  const ModelSpec m = load_model("mixtral-8x7b");
  TrainingSpec tr = test::training(4096, 8);
  tr.framework = load_framework(Framework::fsdp);
  const ClusterSpec c = test::cluster(8, "dgx-h100");
  ParallelPlan p = test::plan(8, 1, 1);
  p.zero = 3;
  const Estimate e = estimate(m, tr, p, c, Simulation::skip);
  const DeviceParams dev = device_params(m, p, 0);
  const double units = m.layers + 2.0;  // the layers, the embedding and the LM head
  const Placement dp = placement_of(Parallelism::data, p, c);
  const Placement edp = expert_data_placement(p, c);
  CHECK(edp.ranks == 8);
  const double share = tr.framework.pricing.zero3_busbw.at(dp.ranks, dp.domains());
  const double bytes = tr.recipe.all_gather_bytes;
  const double expect =
      (collective_time(Collective::all_gather, dev.dense / units * bytes, dp, c) +
       collective_time(Collective::all_gather, dev.experts / units * bytes, edp, c)) /
      share;
  CHECK(dev.experts > 10 * dev.dense);  // Mixtral's weights are mostly experts
  CHECK(e.comm.dp_params.call_s == doctest::Approx(expect));
  // With EP 8 every rank holds its experts whole: nothing of them to gather.
  p.ep = 8;
  CHECK(expert_data_placement(p, c).ranks == 1);
}
