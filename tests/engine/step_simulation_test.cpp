// The re-rank: the search's closed forms pick the candidates, the simulated step orders them.
#include "shardplan/step_simulation.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "shardplan/plan.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

struct Setup {
  ModelSpec m = load_model("gpt3-1.3b");
  TrainingSpec t = test::training(2048, 64);
  ClusterSpec c = test::cluster(16, "dgx-h100");
  Setup() { t.framework = load_framework(Framework::megatron); }

  // A plan as the search would rank it: its closed-form step.
  Candidate candidate(const ParallelPlan& p) const {
    const Estimate e = estimate(m, t, p, c, Simulation::skip);
    Candidate x;
    x.plan = p;
    x.step_s = e.time.step_s;
    x.tokens_per_s = static_cast<double>(t.global_batch) * t.seq_len / x.step_s;
    x.objective = x.step_s;
    return x;
  }
  double simulated_s(const ParallelPlan& p) const { return estimate(m, t, p, c).simulated.step_s; }
};

}  // namespace

TEST_CASE("Closed form and simulation rank two plans apart: the re-rank takes the simulated best") {
  const Setup s;
  // TP 2 (micro-batch 2) with ZeRO-1 against PP 2 x interleave 6 (micro-batch 1) on 16 H100s:
  // the closed form puts TP 2 first, the simulation the pipeline (its interleaved bubble and
  // sends, in Megatron-Core's order, come out below the closed form's (p - 1)(F + B) / v here).
  ParallelPlan tp2 = test::plan(8, 2, 1, 2);
  tp2.zero = 1;
  ParallelPlan pp2 = test::plan(8, 1, 2, 1);
  pp2.zero = 1;
  pp2.interleave = 6;
  const Candidate a = s.candidate(tp2), b = s.candidate(pp2);
  REQUIRE(a.step_s < b.step_s);
  REQUIRE(s.simulated_s(pp2) < s.simulated_s(tp2));
  // A third plan more than 10% behind the best closed form is not simulated.
  ParallelPlan slow = test::plan(16, 1, 1, 1);
  slow.recompute = Recompute::full;
  const Candidate far = s.candidate(slow);
  REQUIRE(far.step_s > 1.1 * a.step_s);
  std::vector<Candidate> ranked = {a, b, far};
  const Rerank r = rerank(s.m, s.t, s.c, Objective::time, RerankRule{}, 3, ranked);
  CHECK(r.simulated == 2);
  CHECK(r.candidates == 3);
  CHECK(r.changed);
  CHECK(ranked[0].plan.pp == 2);
  CHECK(ranked[0].step_s == doctest::Approx(s.simulated_s(pp2)));
  CHECK(ranked[1].plan.tp == 2);
  CHECK(ranked[2].step_s == far.step_s);  // the closed form's, not simulated
  CHECK(r.closed_form_best.plan.tp == 2);
  CHECK(r.chosen_closed_form_s == doctest::Approx(b.step_s));
  CHECK(r.chosen_simulated_s == doctest::Approx(s.simulated_s(pp2)));
  // at_most bounds it: one plan simulated, nothing to re-rank against.
  std::vector<Candidate> again = {a, b, far};
  const Rerank one = rerank(s.m, s.t, s.c, Objective::time, RerankRule{0.10, 1}, 3, again);
  CHECK(one.simulated == 1);
  CHECK_FALSE(one.changed);
}

TEST_CASE("plan_cluster: the fastest plan is the simulated best of those it simulated") {
  const Setup s;
  PlanningRequest rq;
  rq.search.threads = 1;
  rq.search.top_k = 5;
  const PlanningResult r = plan_cluster(s.m, s.t, s.c, rq);
  REQUIRE(r.rerank.simulated >= 1);
  REQUIRE(r.rerank.simulated <= rq.rerank.at_most);
  CHECK(r.found.ranked.size() == 5);
  CHECK(r.rerank.candidates == r.found.feasible);
  REQUIRE(r.fastest() != nullptr);
  const double best_s = s.simulated_s(r.fastest()->plan);
  CHECK(r.fastest()->step_s == doctest::Approx(best_s));
  for (int i = 1; i < std::min(r.rerank.simulated, 5); ++i)
    CHECK(r.found.ranked[static_cast<size_t>(i)].step_s >= best_s);
}

TEST_CASE("plan_cluster simulates each plan once and reports the same figures from it") {
  const Setup s;
  PlanningRequest rq;
  rq.search.threads = 2;
  rq.search.top_k = 20;
  const PlanningResult r = plan_cluster(s.m, s.t, s.c, rq);
  REQUIRE(r.simulated != nullptr);
  REQUIRE(r.recommended() != nullptr);
  // The recommended plan's report is the estimate its rung's re-rank made, not a second one.
  const Estimate* held = r.simulated->find(r.recommended()->plan.plan);
  REQUIRE(held != nullptr);
  REQUIRE(r.recommended_estimate.has_value());
  CHECK(r.recommended_estimate->step_s == held->step_s);
  CHECK(held->step_s == doctest::Approx(s.simulated_s(r.recommended()->plan.plan)));
  // A plan asked for again is looked up, not simulated.
  SimulatedPlans plans;
  int made = 0;
  const ParallelPlan p = r.found.ranked.front().plan;
  auto make = [&] {
    ++made;
    return estimate(s.m, s.t, p, s.c, Simulation::figures);
  };
  const double first = plans.get(p, make).step_s;
  CHECK(plans.get(p, make).step_s == first);
  CHECK(made == 1);
  ParallelPlan other = p;
  other.micro_batch *= 2;
  CHECK(plans.find(other) == nullptr);
}

namespace {

// Mixtral 8x7B on 8 H100s, experts over 8 (or 4 under a pipeline of 2), 16 micro-batches.
struct MoeSetup {
  ModelSpec m = load_model("mixtral-8x7b");
  TrainingSpec t = test::training(4096, 64);
  ClusterSpec c = test::cluster(8, "dgx-h100");

  static int pairs(const SimulatedStep& s) {
    int n = 0;
    for (const SimEvent& e : s.result.events) n += e.kind == SimTaskKind::overlapped ? 1 : 0;
    return n;
  }
  SimulatedStep simulated(const ParallelPlan& p) const { return estimate(m, t, p, c).simulated; }
};

}  // namespace

TEST_CASE("DualPipe-V pairs its F&B chunks only when the plan overlaps the all-to-alls") {
  MoeSetup s;
  // Nodes of 2 GPUs, so the expert group of 4 spans two nodes and its all-to-alls cross the
  // scale-out network: hiding them outweighs what pairing costs the paired compute
  // (GpuSpec::overlap_slowdown). Inside one NVLink node the two roughly cancel.
  ClusterOptions two_per_node;
  two_per_node.cluster = "dgx-h100";
  two_per_node.gpus = 8;
  two_per_node.gpus_per_node = 2;
  s.c = build_cluster(two_per_node);
  s.t.framework = load_framework(Framework::torchtitan);
  ParallelPlan p = test::plan(4, 1, 2);
  p.ep = 4;
  p.interleave = 2;
  p.schedule = Schedule::dualpipe_v;
  const SimulatedStep off = s.simulated(p);
  REQUIRE(off.ran);
  // Off (torchtitan's pipeline_parallel_expert_parallel_overlap false): a forward, then a
  // backward, every all-to-all in its pass, as the closed form prices them.
  CHECK(MoeSetup::pairs(off) == 0);
  CHECK(off.exposed_s[static_cast<int>(SimStream::ep)] ==
        doctest::Approx(estimate(s.m, s.t, p, s.c).comm.ep.exposed_s));
  p.moe_a2a_overlap = true;
  const SimulatedStep on = s.simulated(p);
  CHECK(MoeSetup::pairs(on) > 0);
  CHECK(on.step_s < off.step_s);
  CHECK(on.exposed_s[static_cast<int>(SimStream::ep)] <
        off.exposed_s[static_cast<int>(SimStream::ep)]);
}

TEST_CASE("Megatron-Core's combined 1F1B: paired passes with the overlap, no pipeline or interleaved") {
  MoeSetup s;
  s.t.framework = load_framework(Framework::megatron);
  ParallelPlan flat = test::plan(8, 1, 1);
  flat.ep = 8;
  CHECK(MoeSetup::pairs(s.simulated(flat)) == 0);
  const double alone_s = s.simulated(flat).step_s;
  flat.moe_a2a_overlap = true;
  // 8 micro-batches per replica: F0 alone, then 7 pairs, then the last backward.
  const SimulatedStep paired = s.simulated(flat);
  CHECK(MoeSetup::pairs(paired) == 7);
  CHECK(paired.step_s < alone_s);
  ParallelPlan vpp = test::plan(4, 1, 2);
  vpp.ep = 4;
  vpp.interleave = 2;
  vpp.moe_a2a_overlap = true;
  CHECK(MoeSetup::pairs(s.simulated(vpp)) > 0);
  // A framework that runs the overlap under DualPipeV only does not pair 1F1B.
  s.t.framework = load_framework(Framework::torchtitan);
  CHECK(MoeSetup::pairs(s.simulated(vpp)) == 0);
}

TEST_CASE("estimate's step, throughput and time to train are the simulated step's") {
  Setup s;
  s.t.tokens = 1e9;
  ParallelPlan p = test::plan(8, 1, 2, 2);
  p.zero = 1;
  p.interleave = 4;
  const Estimate e = estimate(s.m, s.t, p, s.c);
  REQUIRE(e.step_simulated);
  CHECK(e.step_s == e.simulated.step_s);
  CHECK(e.step_s != doctest::Approx(e.time.step_s));  // the closed form stays in `time`
  const double tokens_per_step = static_cast<double>(s.t.global_batch) * s.t.seq_len;
  CHECK(e.throughput.tokens_per_s == doctest::Approx(tokens_per_step / e.simulated.step_s));
  CHECK(e.throughput.mfu == doctest::Approx(e.throughput.model_flops /
                                            (e.simulated.step_s * s.c.gpus * e.throughput.peak_flops)));
  CHECK(e.train_s == doctest::Approx(std::ceil(s.t.tokens / tokens_per_step) * e.simulated.step_s));
  // Without the simulation the closed form is the step.
  const Estimate closed = estimate(s.m, s.t, p, s.c, Simulation::skip);
  CHECK_FALSE(closed.step_simulated);
  CHECK(closed.step_s == closed.time.step_s);
  CHECK(closed.time.step_s == doctest::Approx(e.time.step_s));
  // Validation's figures-only run gives the same step without the events.
  const Estimate figures = estimate(s.m, s.t, p, s.c, Simulation::figures);
  CHECK(figures.step_s == doctest::Approx(e.step_s));
  CHECK(figures.simulated.result.events.empty());
  CHECK_FALSE(e.simulated.result.events.empty());
}

// A step that ends on the gradient sync: Llama 3.1 8B under ZeRO-3 on two DGX H100 nodes joined
// by 25 GbE, one stage. After the last backward the reduce-scatters still queued on the reduce
// stream are exposed communication, not pipeline bubble (a single stage has none): the breakdown
// reported 19.38 s of "bubble" here when the tail after the last pass went uncharged, and ~9 s
// when a wait along a chain of transfers was followed only 64 links back.
TEST_CASE("a step that ends on its gradient sync charges the tail to the sync, not the bubble") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 64);
  t.framework = load_framework(Framework::torchtitan);
  ClusterOptions o;
  o.cluster = "dgx-h100";
  o.gpus = 16;
  o.inter = "25gbe";
  const ClusterSpec c = build_cluster(o);
  ParallelPlan p = test::plan(16, 1, 1, 1);
  p.zero = 3;
  p.dp_shard = 8;  // HSDP: shard inside a node, replicate across the two
  const SimulatedStep s = estimate(m, t, p, c).simulated;
  REQUIRE(s.ran);
  const double reduce = s.exposed_s[static_cast<int>(SimStream::dp_reduce)];
  CHECK(s.bubble_s == doctest::Approx(0).epsilon(1e-9));
  CHECK(reduce > 0.5 * s.step_s);
  // The parts add up to the step: compute, optimizer, every stream's exposed time, the bubble.
  double parts = s.compute_s + s.optimizer_s + s.bubble_s;
  for (double e : s.exposed_s) parts += e;
  CHECK(parts == doctest::Approx(s.step_s).epsilon(1e-6));
}
