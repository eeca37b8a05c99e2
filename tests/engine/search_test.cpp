// The search against brute force: on a space small enough to walk plan by plan with estimate(),
// the search must count every point, reject exactly what check_plan() rejects, and rank first
// the plan that brute force finds fastest.
#include "shardplan/search.hpp"

#include <doctest/doctest.h>

#include <limits>

#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// Every point of the space as a plan, in the search's own axis order.
std::vector<ParallelPlan> points_of(const SearchSpace& space, int gpus, int layers) {
  std::vector<ParallelPlan> out;
  for (int tp : space.tp)
    for (int pp : space.pp)
      for (int cp : space.cp)
        for (int ep : space.ep)
          for (int zero : space.zero)
            for (int mb : space.micro_batch)
              for (int v : space.interleave)
                for (Recompute r : space.recompute)
                  for (bool sp : space.sequence_parallel)
                    for (Schedule schedule : space.schedule)
                      for (bool lighter : space.lighter_ends)
                        for (int shard_gpus : space.shard_gpus) {
                        ParallelPlan p;
                        p.schedule = schedule;
                        p.tp = tp;
                        p.pp = pp;
                        p.cp = cp;
                        p.dp = gpus % (tp * pp * cp) == 0 ? gpus / (tp * pp * cp) : 0;
                        p.ep = ep;
                        p.zero = zero;
                        p.micro_batch = mb;
                        p.interleave = v;
                        p.recompute = r;
                        p.sequence_parallel = sp;
                        if (lighter) set_lighter_ends(layers, pp * v, p);
                        // A shard group of shard_gpus GPUs: that many over tp x cp ranks
                        // (-1 where they do not divide, which the rules refuse).
                        p.dp_shard = shard_gpus == 0             ? 0
                                     : shard_gpus % (tp * cp) == 0 ? shard_gpus / (tp * cp)
                                                                   : -1;
                        out.push_back(p);
                      }
  return out;
}

struct Case {
  const char* model;
  const char* cluster;
  int gpus;
  int seq;
  int global_batch;
};

}  // namespace

TEST_CASE("the search ranks first the plan brute force finds fastest, and counts every point") {
  for (const Case& k :
       {Case{"llama-2-7b", "dgx-h100", 8, 4096, 64}, Case{"gpt3-13b", "dgx-a100", 16, 2048, 128}}) {
    CAPTURE(k.model);
    const ModelSpec m = load_model(k.model);
    const ClusterSpec c = test::cluster(k.gpus, k.cluster);
    const TrainingSpec t = test::training(k.seq, k.global_batch);
    const SearchSpace space = full_space(m, t, c);
    SearchOptions o;
    o.top_k = 5;
    o.threads = 1;
    const SearchResult r = search(m, t, c, space, o);

    const auto points = points_of(space, k.gpus, m.layers);
    REQUIRE(static_cast<long long>(points.size()) == space.size());
    CHECK(r.evaluated == space.size());

    long long runnable = 0, fitting = 0;
    double best_step_s = std::numeric_limits<double>::infinity();
    for (const ParallelPlan& p : points) {
      if (p.dp == 0 || !check_plan(m, t, p, c).empty()) continue;
      ++runnable;
      const Estimate e = estimate(m, t, p, c);
      if (!e.memory.fits) continue;
      ++fitting;
      best_step_s = std::min(best_step_s, e.time.step_s);
    }
    // What the search modelled is what check_plan() lets run; what fits is what estimate() fits.
    CHECK(r.modelled == runnable);
    CHECK(r.feasible == fitting);
    REQUIRE(fitting > 0);
    REQUIRE(!r.ranked.empty());
    CHECK(r.ranked.front().step_s == doctest::Approx(best_step_s));

    // Ranked best first, at most top_k, each one fits.
    CHECK(r.ranked.size() <= 5);
    for (size_t i = 1; i < r.ranked.size(); ++i)
      CHECK(r.ranked[i - 1].objective <= r.ranked[i].objective);
    for (const Candidate& cand : r.ranked) CHECK(cand.peak_bytes <= c.gpu.memory_bytes);

    // The rejections and the modelled plans add up to every point visited.
    long long rule_rejects = 0;
    for (long long n : r.rejected) rule_rejects += n;
    CHECK(rule_rejects + r.modelled == r.evaluated);
    CHECK(r.rejected_memory + r.feasible == r.modelled);
  }
}

TEST_CASE("a space of one point returns that plan, or nothing when it does not fit") {
  const ModelSpec m = load_model("llama-2-7b");
  const ClusterSpec c = test::cluster(8, "dgx-h100");
  const TrainingSpec t = test::training(4096, 64);
  SearchSpace one;
  one.tp = {2};
  one.pp = {1};
  one.cp = {1};
  one.ep = {1};
  one.zero = {1};
  one.micro_batch = {2};
  one.interleave = {1};
  one.recompute = {Recompute::selective};
  one.sequence_parallel = {true};
  one.schedule = {Schedule::one_f_one_b};
  one.lighter_ends = {false};
  const SearchResult r = search(m, t, c, one, {});
  CHECK(r.evaluated == 1);
  REQUIRE(r.ranked.size() == 1);
  CHECK(describe(r.ranked[0].plan) ==
        "dp 4 x tp 2 x pp 1, ZeRO-1, micro-batch 2, recompute selective, sequence parallel");

  // The same plan for a model four times the width does not fit in 80 GB: nothing ranked, and
  // the least-memory plan is the one point.
  const ModelSpec big = load_model("llama-3.1-70b");
  const SearchResult none = search(big, t, c, one, {});
  CHECK(none.ranked.empty());
  CHECK(none.feasible == 0);
  REQUIRE(none.have_least_memory);
  CHECK(none.least_memory.peak_bytes > c.gpu.memory_bytes);
  // The search prices a plan over memory only where it is kept as the closest to fitting, and
  // then as it prices one that fits: the closed-form step estimate() gives that plan.
  REQUIRE(none.least_memory.priced);
  const double closed_form =
      estimate(big, t, none.least_memory.plan, c, Simulation::skip).time.step_s;
  CHECK(closed_form > 0);
  CHECK(none.least_memory.step_s == doctest::Approx(closed_form).epsilon(1e-12));
  CHECK(none.least_memory.objective == none.least_memory.step_s);
  // price() fills in a plan the search left unpriced, to the same figures.
  Candidate later = none.least_memory;
  later.priced = false;
  later.step_s = later.exposed_comm_s = later.tokens_per_s = later.objective = 0;
  price(big, t, c, Objective::time, later);
  CHECK(later.priced);
  CHECK(later.step_s == none.least_memory.step_s);
  CHECK(later.exposed_comm_s == none.least_memory.exposed_comm_s);
  CHECK(later.tokens_per_s == none.least_memory.tokens_per_s);
}

TEST_CASE("the search varies expert tp for a MoE model, and the expert tp 1 it finds is runnable") {
  const ModelSpec m = load_model("qwen3-235b-a22b");
  const ClusterSpec c = test::cluster(64, "dgx-b200");
  const TrainingSpec t = test::training(4096, 256);
  REQUIRE(full_space(m, t, c).expert_tp == std::vector<int>{0, 1});
  REQUIRE(full_space(load_model("llama-2-7b"), t, c).expert_tp == std::vector<int>{0});

  // tp 4 x pp 4 leaves dp 4: experts split as tp spread over at most ep 4 (ep divides dp x cp);
  // whole experts (expert tp 1) fold over tp x dp, so ep 8 is a plan too. The step model prices
  // whole experts (full-width expert GEMMs) faster than tp-split ones here.
  SearchSpace space;
  space.tp = {4};
  space.pp = {4};
  space.cp = {1};
  space.ep = {4, 8};
  space.zero = {1};
  space.micro_batch = {1};
  space.interleave = {1};
  space.recompute = {Recompute::none};
  space.sequence_parallel = {true};
  space.schedule = {Schedule::one_f_one_b};
  space.lighter_ends = {false};
  SearchOptions o;
  o.threads = 1;
  const SearchResult as_tp = search(m, t, c, space, o);
  REQUIRE(!as_tp.ranked.empty());
  CHECK(as_tp.ranked.front().plan.etp == 0);
  CHECK(as_tp.ranked.front().plan.ep == 4);

  space.expert_tp = {0, 1, 4};  // 4 is tp: the plan with expert tp 0, not a point of its own
  CHECK(space.size() == 4);
  const SearchResult folded = search(m, t, c, space, o);
  CHECK(folded.evaluated == 4);
  REQUIRE(!folded.ranked.empty());
  const ParallelPlan& best = folded.ranked.front().plan;
  CHECK(best.etp == 1);
  CHECK(folded.ranked.front().step_s < as_tp.ranked.front().step_s);
  CHECK(check_plan(m, t, best, c).empty());
}

TEST_CASE("what the framework cannot run is counted under its rule, as visited points") {
  const ModelSpec m = load_model("llama-2-7b");
  const ClusterSpec c = test::cluster(8, "dgx-h100");
  TrainingSpec t = test::training(4096, 64);
  t.framework = load_framework(Framework::megatron);  // 1F1B and interleaved only
  const SearchSpace space = full_space(m, t, c);
  const long long schedules = space.refused[static_cast<int>(RuleId::framework_schedule)];
  CHECK(schedules > 0);
  CHECK(space.refused_points() == schedules);
  CHECK(all_axes(m, t, c).size() == space.size() + space.refused_points());
  SearchOptions o;
  o.threads = 2;
  const SearchResult r = search(m, t, c, space, o);
  CHECK(r.evaluated == space.size() + space.refused_points());
  CHECK(r.rejected[static_cast<int>(RuleId::framework_schedule)] >= schedules);
  long long rule_rejects = 0;
  for (long long n : r.rejected) rule_rejects += n;
  CHECK(rule_rejects + r.modelled == r.evaluated);
}

TEST_CASE("plan_over: dp is what tp x pp x cp leave of the GPUs") {
  const ParallelPlan p = plan_over(64, {.tp = 8, .pp = 2, .zero = 1});
  CHECK(p.dp == 4);
  CHECK(p.gpus() == 64);
  CHECK(p.zero == 1);
  CHECK(plan_over(64, {.tp = 8, .pp = 2, .cp = 2}).dp == 2);
  CHECK(plan_over(10, {.tp = 4}).dp == 0);  // no dp makes 10: the gpu_count rule refuses it
}
