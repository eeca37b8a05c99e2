// Step-time model: the 7B gradient-sync arithmetic, FLOP identities from the papers, and that the parts
// of a step add up.
#include "shardplan/step_time.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "shardplan/accuracy.hpp"
#include "shardplan/collectives.hpp"
#include "shardplan/comm.hpp"
#include "shardplan/compute.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

ClusterSpec flat(const std::string& link, int gpus) {
  ClusterOptions o;
  o.gpu = "H100-SXM";
  o.link = link;
  o.gpus = gpus;
  return build_cluster(o);
}

double share(const Traffic& t, const StepTime& s) {
  return t.time_s / (s.step_s - t.exposed_s + t.time_s);
}

}  // namespace

TEST_CASE("a 7B gradient sync is 27 ms over NVLink and 19.6 s over 10 GbE") {
  // bf16 gradients of 7e9 params = 14e9 B; a ring all-reduce on 8 GPUs moves
  // 2 (n-1)/n x 14e9 = 24.5e9 B per GPU (nccl-tests doc/PERFORMANCE.md): 27 ms at 900 GB/s,
  // 19.6 s at 10 Gb/s = 1.25 GB/s; 6% of a step against 98% of it.
  const TrainingSpec t = test::training(4096, 8);
  const ParallelPlan p = test::plan(8, 1, 1);
  const Estimate nvlink = estimate(test::params_only(7e9), t, p, flat("900GB/s", 8));
  CHECK(nvlink.comm.dp_grads.wire_bytes == doctest::Approx(24.5e9));
  CHECK(nvlink.comm.dp_grads.time_s == doctest::Approx(0.027).epsilon(0.03));
  CHECK(std::round(share(nvlink.comm.dp_grads, nvlink.time) * 100) == 6);
  const Estimate ethernet = estimate(test::params_only(7e9), t, p, flat("10Gbit/s", 8));
  CHECK(ethernet.comm.dp_grads.time_s == doctest::Approx(19.6).epsilon(0.03));
  CHECK(std::round(share(ethernet.comm.dp_grads, ethernet.time) * 100) == 98);
}

TEST_CASE("nccl-tests bus factors and times") {
  // nccl-tests doc/PERFORMANCE.md.
  CHECK(info(Collective::all_reduce).bus_factor(8) == doctest::Approx(2.0 * 7 / 8));
  CHECK(info(Collective::all_gather).bus_factor(8) == doctest::Approx(7.0 / 8));
  CHECK(info(Collective::reduce_scatter).bus_factor(8) == doctest::Approx(7.0 / 8));
  CHECK(info(Collective::broadcast).bus_factor(8) == 1.0);
  CHECK(busbw(Collective::all_reduce, 8, 1e9, 0.01) == doctest::Approx(1e11 * 1.75));
  // A DGX A100 data-parallel ring with 8 GPUs per node across nodes is bounded by the node's
  // 8 HDR NICs: min(NVLink3 235, 8 x 24) = 192 GB/s.
  const ClusterSpec c = test::cluster(64, "dgx-a100");
  Placement g;
  g.ranks = 64;
  g.ranks_per_domain = 8;
  CHECK(placement_busbw(Collective::all_reduce, g, c) == doctest::Approx(192e9));
  g.ranks = 8;
  g.ranks_per_domain = 1;  // one GPU per node: one NIC
  CHECK(placement_busbw(Collective::all_reduce, g, c) == doctest::Approx(24e9));
}

TEST_CASE("model FLOPs are Korthikanti Eq. 7; full-recompute hardware FLOPs are Narayanan Eq. 3") {
  const double B = 64, s = 2048, l = 96, h = 12288, V = 51200;
  const ModelSpec m = test::gpt(96, 12288, 96, 51200);
  const double eq7 = 72 * B * l * s * h * h * (1 + s / (6 * h) + V / (12 * h * l));
  CHECK(3 * forward_model_flops(m, B, 2048) == doctest::Approx(eq7).epsilon(1e-3));
  TrainingSpec t = test::training(2048, 64);
  t.attention = AttentionKind::standard;
  ParallelPlan p = test::plan(1, 8, 8);
  p.recompute = Recompute::full;
  const Estimate e = estimate(m, t, p, test::cluster(64));
  const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  CHECK(e.throughput.hardware_flops == doctest::Approx(eq3).epsilon(1e-3));
}

TEST_CASE("the parts of a step add up") {
  const ModelSpec m = load_model("llama-3.1-70b");
  TrainingSpec t = test::training(8192, 64);
  ParallelPlan p = test::plan(2, 8, 4);
  p.zero = 1;
  p.recompute = Recompute::selective;
  p.sequence_parallel = true;
  const Estimate e = estimate(m, t, p, test::cluster(64, "dgx-h100"));
  const StepTime& s = e.time;
  CHECK(s.step_s == doctest::Approx(s.compute_s + s.bubble_s + s.exposed_comm_s + s.optimizer_s));
  CHECK(s.exposed_comm_s == doctest::Approx(e.comm.exposed_s()));
  CHECK(s.micro_batches == 32);
  CHECK(e.throughput.mfu > 0.2);
  CHECK(e.throughput.mfu < 0.6);  // above every published large-scale MFU (Llama 3 405B: 38-43%)
}

TEST_CASE("a full-vocabulary loss gathers the logits over TP on the LM head's stage") {
  // Llama 3.1 8B, 8192 tokens a micro-batch, tp 4: the gathered logits are 8192 x 128256 bf16
  // values, one all-gather in forward (backward splits them locally), at the framework's share
  // of the link's busbw like every TP collective.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 8);
  ParallelPlan p = test::plan(2, 4, 1);
  p.sequence_parallel = true;
  const ClusterSpec c = test::cluster(8);
  CHECK(micro_batch_cost(m, t, p, c).tp_loss_gather_s == 0);
  t.full_vocab_loss = true;
  const double gather = collective_time(Collective::all_gather, 8192.0 * 128256.0 * 2.0,
                                        placement_of(Parallelism::tensor, p, c), c);
  CHECK(gather > 0);
  CHECK(micro_batch_cost(m, t, p, c).tp_loss_gather_s ==
        doctest::Approx(gather / t.framework.pricing.tp_busbw.at(4)));
}

TEST_CASE("pipeline bubble is (p-1)/(v m) of the ideal time") {
  // Narayanan et al. 2021 Sec. 2.2: bubble fraction (p-1)/m for 1F1B, (p-1)/(v m) interleaved.
  const ModelSpec m = test::gpt(96, 12288, 96);
  TrainingSpec t = test::training(2048, 64);
  ParallelPlan p = test::plan(1, 8, 8);
  const Estimate plain = estimate(m, t, p, test::cluster(64));
  // Stages differ (embedding, LM head), so compare with the average stage: within a few %.
  CHECK(plain.time.bubble_s / plain.time.compute_s == doctest::Approx(7.0 / 64).epsilon(0.05));
  p.interleave = 3;
  const Estimate inter = estimate(m, t, p, test::cluster(64));
  CHECK(inter.time.bubble_s / inter.time.compute_s ==
        doctest::Approx(7.0 / (3 * 64)).epsilon(0.05));
}

TEST_CASE("ZeRO-3 moves 1.5x the data-parallel volume") {
  // Rajbhandari et al. 2020 Sec. 7.2: 3 Psi with P_os+g+p against 2 Psi for DDP.
  const ModelSpec m = load_model("llama-2-7b");
  TrainingSpec t = test::training(4096, 64);
  ParallelPlan p = test::plan(64, 1, 1);
  const ClusterSpec c = test::cluster(64, "dgx-h100");
  const Estimate ddp = estimate(m, t, p, c);
  p.zero = 3;
  const Estimate z3 = estimate(m, t, p, c);
  const double ddp_bytes = ddp.comm.total(Parallelism::data).wire_bytes;
  const double z3_bytes = z3.comm.total(Parallelism::data).wire_bytes;
  CHECK(z3_bytes / ddp_bytes == doctest::Approx(1.5));
}

TEST_CASE("the GEMM efficiency curve interpolates its points") {
  const GpuSpec g = load_gpu("A100-80GB");
  for (const auto& pt : g.gemm_efficiency)
    CHECK(gemm_efficiency(g, pt.flops) == doctest::Approx(pt.efficiency));
  CHECK(gemm_efficiency(g, 3e10) > gemm_efficiency(g, 1e10));
  CHECK(gemm_efficiency(g, 1e16) == doctest::Approx(g.gemm_efficiency.back().efficiency));
}

TEST_CASE("a GEMM whose tiles spill into a second wave pays for the whole wave") {
  // H100 SXM5: 132 SMs (NVIDIA H100 whitepaper, Table 3). 132 output tiles of 128 x 256 fill one
  // wave; 133 need two, the second with one tile on one SM, so the step takes twice as long for
  // 1/132 more work: its share of the tile slots is 133 / 264.
  const GpuSpec h100 = load_gpu("H100-SXM");
  REQUIRE(h100.sm_count == 132);
  Op op;
  op.kind = OpKind::gemm;
  op.n = 256;
  op.k = 8192;
  const auto forward_s = [&](double tiles) {
    op.m = 128 * tiles;
    op.flops = 2.0 * op.m * op.n * op.k;
    op.bytes = 0;
    return op_forward_s(op, h100, MathDtype::bf16);
  };
  const double one_wave = forward_s(132), spilled = forward_s(133);
  const double peak = peak_flops(h100, MathDtype::bf16);
  CHECK(one_wave == doctest::Approx(op.flops * 132 / 133 /
                                    (peak * gemm_efficiency(h100, op.flops * 132 / 133))));
  CHECK(spilled ==
        doctest::Approx(op.flops / (peak * gemm_efficiency(h100, op.flops) * 133.0 / 264)));
  CHECK(spilled / one_wave > 1.95);
  // A profile without an SM count leaves the term out, and so does a probe-measured curve (its
  // shapes' waves are in what it measured).
  const double no_waves = op.flops / (peak * gemm_efficiency(h100, op.flops));
  GpuSpec unknown = h100;
  unknown.sm_count = 0;
  CHECK(op_forward_s(op, unknown, MathDtype::bf16) == doctest::Approx(no_waves));
  GpuSpec measured = h100;
  measured.calibrated = true;
  CHECK(op_forward_s(op, measured, MathDtype::bf16) == doctest::Approx(no_waves));
}

TEST_CASE("Ulysses context parallel: four all-to-alls a layer each way, on the critical path") {
  // Jacobs et al. 2023 (DeepSpeed-Ulysses, arXiv:2309.14509) Sec. 3.1: q, k and v go all-to-all
  // from a sequence split to a head split before attention, the output back after it, and the
  // backward moves their gradients the same way. Llama 3.1 8B (32 layers, 32 query and 8 KV
  // heads of 128), sequence 32,768 over cp 4: 8,192 tokens a rank, bf16.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(32768, 8);
  ParallelPlan p = test::plan(2, 1, 1);
  p.cp = 4;
  p.zero = 1;
  const ClusterSpec c = flat("900GB/s", 8);
  const Estimate ring = estimate(m, t, p, c);
  t.context_parallel = ContextParallel::ulysses;
  const Estimate ulysses = estimate(m, t, p, c);
  const Traffic& a2a = ulysses.comm.cp;
  CHECK(a2a.collective == Collective::all_to_all);
  // 32 layers x (forward + backward) x 4 calls x 4 micro-batches (batch 8 over dp 2).
  CHECK(a2a.calls == 1024);
  // q and the output 8,192 x 32 x 128 x 2 B, k and v 8,192 x 8 x 128 x 2 B: their mean.
  const double q = 8192.0 * 32 * 128 * 2, kv = 8192.0 * 8 * 128 * 2;
  CHECK(a2a.bytes == doctest::Approx((2 * q + 2 * kv) / 4));
  // Nothing hides them; the ring's K/V passes hide behind the attention they feed.
  CHECK(a2a.exposed_s == doctest::Approx(a2a.time_s));
  CHECK(ring.comm.cp.collective == Collective::send_recv);
  CHECK(ring.comm.cp.exposed_s < ring.comm.cp.time_s);
  // No published run trains with Ulysses: its interval is the one for plans beyond the corpus
  // even where ring attention of the same degree ran.
  CorpusReach reach;
  reach.add({false, {}, "bf16", 8, 64});
  CHECK(reach.outside(ring.scope).empty());
  CHECK(reach.outside(ulysses.scope).find("Ulysses") != std::string::npos);
}

TEST_CASE("CUDA graphs leave the profile's share of the fixed costs per layer and micro-batch") {
  // One GPU, 8 micro-batches of a 24-layer model: every fixed cost is on the step's path. With
  // 1 ms a layer and micro-batch and a quarter left under full graphs, the step is
  // 24 x 8 x 1 ms x 3/4 = 144 ms shorter; scoped graphs at half leave 96 ms of the 192.
  TrainingSpec t = test::training(2048, 8);
  t.framework = load_framework(Framework::megatron);
  FrameworkPricing& fp = t.framework.pricing;
  fp.layer_fixed_s = 1e-3;
  fp.moe_layer_fixed_s = 0;
  fp.cuda_graph_full_fixed_share = 0.25;
  fp.cuda_graph_scoped_fixed_share = 0.5;
  const ModelSpec m = test::gpt(24, 2048, 16);
  const ParallelPlan p = test::plan(1, 1, 1);
  const ClusterSpec c = test::cluster(1, "dgx-h100");
  const double none = estimate(m, t, p, c, Simulation::skip).time.step_s;
  t.cuda_graphs = CudaGraphs::full;
  const double full = estimate(m, t, p, c, Simulation::skip).time.step_s;
  t.cuda_graphs = CudaGraphs::scoped;
  const double scoped = estimate(m, t, p, c, Simulation::skip).time.step_s;
  CHECK(none - full == doctest::Approx(24 * 8 * 1e-3 * 0.75).epsilon(1e-6));
  CHECK(none - scoped == doctest::Approx(24 * 8 * 1e-3 * 0.5).epsilon(1e-6));
  // A profile that states no share prices no graphs, and the rule refuses them.
  fp.cuda_graph_full_fixed_share = 0;
  t.cuda_graphs = CudaGraphs::full;
  CHECK(first_broken(p, RuleContext{m, t, c, {}}) == RuleId::framework_cuda_graphs);
}
