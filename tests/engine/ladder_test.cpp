// The decision ladder on the five cases of issue "ladder" and the search's contracts.
#include "shardplan/ladder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "shardplan/memory.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

ClusterSpec gpus_of(const std::string& gpu, int gpus, const std::string& inter = "") {
  ClusterOptions o;
  o.gpu = gpu;
  o.gpus = gpus;
  o.inter = inter;
  return build_cluster(o);
}

Rung stop_of(const ModelSpec& m, const TrainingSpec& t, const ClusterSpec& c) {
  const LadderResult l = walk_ladder(m, t, c);
  REQUIRE(l.stop >= 0);
  return l.rungs[static_cast<size_t>(l.stop)].rung;
}

}  // namespace

TEST_CASE("gpt3-1.3b on 8 H100s stops at single-gpu") {
  const ModelSpec m = load_model("gpt3-1.3b");
  CHECK(stop_of(m, test::training(2048, 16), gpus_of("H100-SXM", 8)) == Rung::single_gpu);
}

TEST_CASE("llama-2-7b on 8 H100s stops at ZeRO-1 or ZeRO-2, after the model states fail one GPU") {
  const ModelSpec m = load_model("llama-2-7b");
  const LadderResult l = walk_ladder(m, test::training(4096, 64), gpus_of("H100-SXM", 8));
  REQUIRE(l.stop >= 0);
  const Rung r = l.rungs[static_cast<size_t>(l.stop)].rung;
  CHECK((r == Rung::zero_1 || r == Rung::zero_2));
  CHECK(l.rungs[0].blocker == Blocker::model_states);  // 16 B x 6.74e9 = 107.8 GB
  CHECK(l.rungs[0].need_bytes == doctest::Approx(16 * 6'738'415'616.0).epsilon(0.001));
}

TEST_CASE("llama-3.1-70b on 64 H100s stops at ZeRO-3: its weights alone exceed a card") {
  const ModelSpec m = load_model("llama-3.1-70b");
  const LadderResult l = walk_ladder(m, test::training(8192, 64), gpus_of("H100-SXM", 64));
  REQUIRE(l.stop >= 0);
  CHECK(l.rungs[static_cast<size_t>(l.stop)].rung == Rung::zero_3);
  CHECK(l.rungs[3].blocker == Blocker::weights);  // ZeRO-2 keeps 2 B x 70.6e9 = 141 GB of weights
}

TEST_CASE("a model whose one layer cannot be gathered stops at tensor-parallel") {
  // 12 h^2 = 51.5e9 parameters per layer: 103 GB gathered in bf16, more than an 80 GB card.
  const ModelSpec m = test::gpt(2, 65536, 256);
  const LadderResult l = walk_ladder(m, test::training(2048, 64), gpus_of("H100-SXM", 64));
  REQUIRE(l.stop >= 0);
  CHECK(l.rungs[static_cast<size_t>(l.stop)].rung == Rung::tensor_parallel);
  CHECK(l.rungs[4].blocker == Blocker::gathered_layer);
  CHECK(l.rungs[4].need_bytes / 1e9 == doctest::Approx(103.1).epsilon(0.01));
  CHECK(l.rungs[static_cast<size_t>(l.stop)].plan.plan.tp <= 8);  // inside a node
}

TEST_CASE("gpt3-175b on 16 nodes of 8 A100s joined by 10 GbE stops at pipeline-parallel") {
  const ModelSpec m = load_model("gpt3-175b");
  const LadderResult l =
      walk_ladder(m, test::training(2048, 128), gpus_of("A100-80GB", 128, "10gbe"));
  REQUIRE(l.stop >= 0);
  const RungVerdict& v = l.rungs[static_cast<size_t>(l.stop)];
  CHECK(v.rung == Rung::pipeline_parallel);
  CHECK(v.plan.plan.tp <= 8);
  CHECK(v.plan.plan.pp > 1);
  // ZeRO-3 and tensor parallel fit but wait on 10 GbE for most of the step.
  CHECK(l.rungs[4].fits);
  CHECK(l.rungs[4].blocker == Blocker::communication);
  CHECK(l.rungs[5].blocker == Blocker::communication);
}

TEST_CASE("an impossible request finds nothing and reports the closest") {
  ModelSpec m;
  m.params_only = 1e12;
  const ClusterSpec c = gpus_of("H100-SXM", 2);
  const TrainingSpec t = test::training(4096, 2);
  const SearchResult r = search(m, t, c, full_space(m, t, c), {});
  CHECK(r.ranked.empty());
  REQUIRE(r.have_least_memory);
  CHECK(r.least_memory.peak_bytes > c.gpu.memory_bytes * 50);
}

TEST_CASE("the search is deterministic and thread-count independent") {
  const ModelSpec m = load_model("llama-2-13b");
  const ClusterSpec c = test::cluster(64, "dgx-h100");
  const TrainingSpec t = test::training(4096, 256);
  const SearchSpace space = full_space(m, t, c);
  SearchOptions one;
  one.threads = 1;
  SearchOptions two;
  two.threads = 2;
  const SearchResult a = search(m, t, c, space, one);
  const SearchResult b = search(m, t, c, space, two);
  CHECK(a.evaluated == space.size());
  CHECK(a.evaluated == b.evaluated);
  CHECK(a.feasible == b.feasible);
  REQUIRE(a.ranked.size() == b.ranked.size());
  for (size_t i = 0; i < a.ranked.size(); ++i) {
    CHECK(describe(a.ranked[i].plan) == describe(b.ranked[i].plan));
    CHECK(a.ranked[i].step_s == b.ranked[i].step_s);
  }
  long long rejected = a.rejected_memory;
  for (long long n : a.rejected) rejected += n;
  CHECK(a.feasible + rejected == a.evaluated);
}

TEST_CASE("the search's fast path agrees with estimate() and estimate_memory()") {
  const ModelSpec m = load_model("llama-3.1-70b");
  const ClusterSpec c = test::cluster(64, "dgx-h100");
  const TrainingSpec t = test::training(8192, 128);
  SearchOptions o;
  o.top_k = 50;
  const SearchResult r = search(m, t, c, full_space(m, t, c), o);
  REQUIRE(r.ranked.size() == 50);
  for (const Candidate& cand : r.ranked) {
    const Estimate e = estimate(m, t, cand.plan, c);
    CAPTURE(describe(cand.plan));
    CHECK(e.time.step_s == doctest::Approx(cand.step_s));
    CHECK(e.memory.total_bytes() == doctest::Approx(cand.peak_bytes));
  }
}

TEST_CASE(
    "a rung the framework cannot run is refused under the framework's rule, from the counts") {
  // torchtitan has no ZeRO-1 (its FSDP2 shards gradients with the weights) and plans no
  // offload: the search takes those points out of the rung and counts them under the rule.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 512);
  t.framework = load_framework(Framework::torchtitan);
  auto rung_of = [](const LadderResult& l, Rung r) {
    const auto it = std::find_if(l.rungs.begin(), l.rungs.end(),
                                 [&](const RungVerdict& v) { return v.rung == r; });
    REQUIRE(it != l.rungs.end());
    return *it;
  };

  const LadderResult eight = walk_ladder(m, t, gpus_of("H100-SXM", 8));
  const RungVerdict zero1 = rung_of(eight, Rung::zero_1);
  CHECK(zero1.blocker == Blocker::no_valid_plan);
  CHECK(zero1.evaluated > 0);
  REQUIRE(zero1.top_rule.has_value());
  CHECK(*zero1.top_rule == RuleId::framework_zero_stage);
  const SearchSpace space = rung_space(Rung::zero_1, m, t, gpus_of("H100-SXM", 8), {});
  CHECK(space.size() == 0);
  CHECK(space.refused[static_cast<int>(RuleId::framework_zero_stage)] == zero1.evaluated);

  const LadderResult one = walk_ladder(m, t, gpus_of("H100-SXM", 1));
  const RungVerdict offload = rung_of(one, Rung::offload);
  CHECK(offload.blocker == Blocker::no_valid_plan);
  REQUIRE(offload.top_rule.has_value());
  // torchtitan offloads inside FSDP only, with the weights sharded over 2 or more ranks (its
  // profile's offload.min_shard_ranks): one GPU has one.
  CHECK(*offload.top_rule == RuleId::framework_offload_shards);
  CHECK(*rung_of(one, Rung::zero_1).top_rule == RuleId::framework_zero_stage);

  // Megatron-Core runs ZeRO-1 (its distributed optimizer): nothing is taken out of that rung.
  t.framework = load_framework(Framework::megatron);
  const SearchSpace megatron = rung_space(Rung::zero_1, m, t, gpus_of("H100-SXM", 8), {});
  CHECK(megatron.size() > 0);
  CHECK(megatron.refused[static_cast<int>(RuleId::framework_zero_stage)] == 0);
}

TEST_CASE("the ladder climbs past a passing rung only when a later one is climb_speedup faster") {
  // DeepSpeed, GPT-3 175B on 512 A100s: ZeRO-3 passes (its exposed traffic stays under half
  // the step) at about 1.4-1.5x the step of the tensor- and pipeline-parallel plans. A threshold
  // below that ratio climbs to a later rung; the default 1.5 keeps ZeRO-3, and so does no
  // climbing at all.
  const ModelSpec m = load_model("gpt3-175b");
  TrainingSpec t = test::training(2048, 1536);
  t.framework = load_framework(Framework::deepspeed);
  t.overlap_grad_reduce = t.framework.pricing.overlap_grad_reduce;
  const ClusterSpec c = gpus_of("A100-80GB", 512);
  LadderOptions climb;
  climb.climb_speedup = 1.4;
  const LadderResult l = walk_ladder(m, t, c, climb);
  REQUIRE(l.stop >= 0);
  REQUIRE(l.first_pass >= 0);
  const RungVerdict& first = l.rungs[static_cast<size_t>(l.first_pass)];
  const RungVerdict& stop = l.rungs[static_cast<size_t>(l.stop)];
  CHECK(first.rung == Rung::zero_3);
  CHECK((stop.rung == Rung::tensor_parallel || stop.rung == Rung::pipeline_parallel));
  CHECK(stop.passes());
  const double speedup = first.plan.step_s / stop.plan.step_s;
  CHECK(speedup >= 1.4);

  for (const double threshold : {LadderOptions{}.climb_speedup, 0.0}) {
    CAPTURE(threshold);
    LadderOptions stay;
    stay.climb_speedup = threshold;
    const LadderResult plain = walk_ladder(m, t, c, stay);
    REQUIRE(plain.stop >= 0);
    CHECK(plain.rungs[static_cast<size_t>(plain.stop)].rung == Rung::zero_3);
  }
}

TEST_CASE("the ladder keeps the first passing rung when later ones are not much faster") {
  // llama-3.1-70b on 64 H100s (megatron): ZeRO-3 passes and the 3D plans gain under 1.5x.
  const ModelSpec m = load_model("llama-3.1-70b");
  const LadderResult l = walk_ladder(m, test::training(8192, 256), gpus_of("H100-SXM", 64));
  REQUIRE(l.stop >= 0);
  CHECK(l.stop == l.first_pass);
  CHECK(l.rungs[static_cast<size_t>(l.stop)].rung == Rung::zero_3);
}

TEST_CASE("a mixture of experts tries expert parallelism after ZeRO-1/2, before ZeRO-3") {
  // Megatron-Core's MoE guide ("Tuning Guide of Parallel Mappings": prefer EP over TP for the
  // expert layer); a dense model never walks the rung, offload is one GPU's only.
  const std::vector<Rung> moe = ladder_order(load_model("qwen3-235b-a22b"), 256);
  const std::vector<Rung> expected = {Rung::single_gpu,      Rung::gradient_accumulation,
                                      Rung::zero_1,          Rung::zero_2,
                                      Rung::expert_parallel, Rung::zero_3,
                                      Rung::tensor_parallel, Rung::pipeline_parallel};
  CHECK(moe == expected);
  const std::vector<Rung> dense = ladder_order(load_model("llama-3.1-70b"), 1);
  CHECK(std::count(dense.begin(), dense.end(), Rung::expert_parallel) == 0);
  CHECK(std::count(dense.begin(), dense.end(), Rung::offload) == 1);
}

TEST_CASE("Qwen3-235B-A22B and DeepSeek-V3 on 256 GPUs stop at expert parallelism") {
  // Neither fits under ZeRO-1/2 (their weights alone: 438 and 1272 GiB); the first passing plan
  // splits the experts, as the published recipes do (EP 8-64).
  struct Case {
    const char* model;
    const char* cluster;
  };
  for (const Case& k :
       {Case{"qwen3-235b-a22b", "dgx-h100"}, Case{"deepseek-v3", "h800-deepseek"}}) {
    CAPTURE(k.model);
    const ModelSpec m = load_model(k.model);
    const TrainingSpec t = test::training(4096, 1024);
    const LadderResult l = walk_ladder(m, t, test::cluster(256, k.cluster));
    REQUIRE(l.stop >= 0);
    const RungVerdict& stop = l.rungs[static_cast<size_t>(l.stop)];
    CHECK(stop.rung == Rung::expert_parallel);
    CHECK(stop.plan.plan.ep > 1);
    CHECK(l.rungs[static_cast<size_t>(l.stop) - 1].rung == Rung::zero_2);
    CHECK(l.moe_total_params / l.moe_active_params > 10);
  }
}

namespace {

// Every field a rung verdict reports, in one comparable line.
std::string verdict_line(const RungVerdict& v) {
  const ParallelPlan& p = v.plan.plan;
  return std::string(to_string(v.rung)) + " fits " + std::to_string(v.fits) + " comm_ok " +
         std::to_string(v.comm_ok) + " blocker " + to_string(v.blocker) + " evaluated " +
         std::to_string(v.evaluated) + " plan " + std::to_string(p.dp) + "/" +
         std::to_string(p.tp) + "/" + std::to_string(p.pp) + "/" + std::to_string(p.cp) + "/" +
         std::to_string(p.ep) + "/" + std::to_string(p.zero) + "/" + std::to_string(p.micro_batch) +
         "/" + to_string(p.recompute) + "/" + std::to_string(p.interleave) + "/" +
         to_string(p.schedule) + " step " + std::to_string(v.plan.step_s) + " memory " +
         std::to_string(v.memory_bytes) + " need " + std::to_string(v.need_bytes) + " top_rule " +
         (v.top_rule ? std::to_string(static_cast<int>(*v.top_rule)) : "-");
}

}  // namespace

TEST_CASE("a ladder that takes its rungs from one full search answers as one that searches each") {
  // plan_cluster searches the full space once and hands every feasible plan to the walk
  // (LadderOptions::searched); each rung must come out as its own search would give it.
  struct Case {
    const char* model;
    const char* gpu;
    int gpus, seq, batch;
    Framework framework;
  };
  const Case cases[] = {
      {"llama-3.1-70b", "H100-SXM", 64, 8192, 256, Framework::megatron},
      {"llama-2-7b", "H100-SXM", 8, 4096, 64, Framework::megatron},
      {"mixtral-8x7b", "H100-SXM", 64, 4096, 256, Framework::megatron},
      {"deepseek-v3", "H100-SXM", 256, 4096, 1024, Framework::megatron},
      {"deepseek-v3", "H100-SXM", 64, 4096, 256, Framework::megatron},
      {"llama-3.1-8b", "A100-80GB", 16, 8192, 64, Framework::torchtitan},
      {"gpt3-1.3b", "H100-SXM", 8, 2048, 16, Framework::deepspeed},
  };
  for (const Case& k : cases) {
    CAPTURE(k.model);
    const ModelSpec m = load_model(k.model);
    TrainingSpec t = test::training(k.seq, k.batch);
    t.framework = load_framework(k.framework);
    t.overlap_grad_reduce = t.framework.pricing.overlap_grad_reduce;
    const ClusterSpec c = gpus_of(k.gpu, k.gpus);
    LadderOptions alone;
    const LadderResult own = walk_ladder(m, t, c, alone);
    const SearchSpace space = full_space(m, t, c, alone.rules);
    SearchOptions every;
    every.top_k = 1 << 30;
    every.keep_over_memory = true;
    const SearchResult found = search(m, t, c, space, every);
    LadderOptions shared = alone;
    shared.searched = &found;
    shared.searched_space = &space;
    const LadderResult taken = walk_ladder(m, t, c, shared);
    // The shared path is taken: each rung's space lies in the full one (single-gpu's whole
    // per-replica batch as one micro-batch need not be a point of it).
    for (const RungVerdict& v : own.rungs) {
      if (v.rung != Rung::single_gpu)
        CHECK(rung_space(v.rung, m, t, c, alone.rules).is_subspace_of(space));
    }
    CHECK(taken.stop == own.stop);
    CHECK(taken.first_pass == own.first_pass);
    REQUIRE(taken.rungs.size() == own.rungs.size());
    for (size_t i = 0; i < own.rungs.size(); ++i)
      CHECK(verdict_line(taken.rungs[i]) == verdict_line(own.rungs[i]));
  }
}
