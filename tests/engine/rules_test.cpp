// The one rule table: each rule on a plan that breaks it and one that keeps it, and agreement of
// check_plan (estimate), the search and the emitters' checks on thousands of random plans.
#include "shardplan/rules.hpp"

#include <doctest/doctest.h>

#include <random>
#include <set>

#include "shardplan/profiles.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/search.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// Llama-2-70B's shape (64 heads, 8 KV heads, 80 layers, MLP 28672) on 64 A100s, batch 64.
struct Fixture {
  ModelSpec model = load_model("llama-2-70b");
  TrainingSpec training = test::training(4096, 64);
  ClusterSpec cluster = test::cluster(64);
  PlanRules rules;
  RuleContext context() const { return {model, training, cluster, rules}; }
};

bool breaks(const Fixture& f, const ParallelPlan& p, RuleId id) {
  for (const RuleProblem& r : check_plan(p, f.context())) {
    if (r.rule == id) return true;
  }
  return false;
}

// A plan that keeps every rule: dp 8 x tp 8, ZeRO-1.
ParallelPlan good() {
  ParallelPlan p = test::plan(8, 8, 1);
  p.zero = 1;
  return p;
}

}  // namespace

TEST_CASE("the good plan keeps every rule; the table lists each rule once") {
  Fixture f;
  CHECK(check_plan(good(), f.context()).empty());
  REQUIRE(plan_rules().size() == static_cast<size_t>(kRules));
  for (int i = 0; i < kRules; ++i) CHECK(plan_rules()[static_cast<size_t>(i)].id == RuleId(i));
}

TEST_CASE("each general rule fires on the plan that breaks it, and only there") {
  Fixture f;
  auto with = [](auto change) {
    ParallelPlan p = good();
    change(p);
    return p;
  };
  struct Case {
    RuleId rule;
    ParallelPlan plan;
  };
  const std::vector<Case> cases = {
      {RuleId::degrees_positive, with([](ParallelPlan& p) { p.micro_batch = 0; })},
      {RuleId::gpu_count, with([](ParallelPlan& p) { p.dp = 4; })},
      {RuleId::zero_stage, with([](ParallelPlan& p) { p.zero = 4; })},
      {RuleId::tp_within_node, with([](ParallelPlan& p) { p.tp = 16, p.dp = 4; })},
      {RuleId::sequence_parallel_needs_tp,
       with([](ParallelPlan& p) { p.tp = 1, p.dp = 64, p.sequence_parallel = true; })},
      {RuleId::batch_split, with([](ParallelPlan& p) { p.micro_batch = 3; })},
      {RuleId::cp_divides_sequence, with([](ParallelPlan& p) { p.cp = 3; })},  // 4096 / 3
      {RuleId::tp_divides_heads, with([](ParallelPlan& p) { p.tp = 3; })},
      {RuleId::pp_within_layers, with([](ParallelPlan& p) { p.pp = 128, p.dp = 1, p.tp = 1; })},
      {RuleId::interleave_needs_pp, with([](ParallelPlan& p) { p.interleave = 2; })},
      {RuleId::ep_needs_moe, with([](ParallelPlan& p) { p.ep = 2; })},
  };
  REQUIRE(cases.size() == 11);
  for (const Case& c : cases) {
    CAPTURE(std::string(to_string(c.rule)));
    CHECK(breaks(f, c.plan, c.rule));
  }
  CHECK_FALSE(breaks(f, good(), RuleId::tp_within_node));
}

TEST_CASE("shape rules: KV heads, MLP width, interleaved chunks and micro-batches") {
  Fixture f;
  f.model.kv_heads = 8;
  ParallelPlan p = good();
  p.tp = 16, p.dp = 4;  // 16 is a multiple of 8 KV heads: allowed when TP may cross nodes
  f.rules.allow_tp_across_nodes = true;
  CHECK_FALSE(breaks(f, p, RuleId::tp_fits_kv_heads));
  f.model.kv_heads = 32;  // 16 divides 32
  CHECK_FALSE(breaks(f, p, RuleId::tp_fits_kv_heads));
  f.model.kv_heads = 24, f.model.heads = 96;  // 16 neither divides 24 nor is a multiple of it
  CHECK(breaks(f, p, RuleId::tp_fits_kv_heads));

  Fixture g;
  g.model.ffn_hidden = 28670;
  CHECK(breaks(g, good(), RuleId::tp_divides_ffn));

  Fixture h;
  ParallelPlan v = test::plan(2, 8, 4);
  v.interleave = 3;  // 80 layers into 4 x 3 chunks
  CHECK(breaks(h, v, RuleId::stage_layout));
  v.first_stage_layers = 7;  // 80 - 7 - 7 = 66 layers for the other 10 chunks: no
  v.last_stage_layers = 7;
  CHECK(breaks(h, v, RuleId::stage_layout));
  v.first_stage_layers = 4;  // 80 - 4 - 4 = 72 = 10 x 7.2: no
  CHECK(breaks(h, v, RuleId::stage_layout));
  v.first_stage_layers = v.last_stage_layers = 5;  // 80 - 10 = 70 = 10 chunks x 7
  CHECK_FALSE(breaks(h, v, RuleId::stage_layout));
  v.first_stage_layers = v.last_stage_layers = -1;
  v.interleave = 5;  // 80 = 4 x 5 x 4, and 32 micro-batches per step fill pp 4
  CHECK_FALSE(breaks(h, v, RuleId::schedule_runs));
  h.training.global_batch = 6;  // 3 micro-batches cannot fill pp 4 (Megatron-Core needs >= pp)
  CHECK(breaks(h, v, RuleId::schedule_runs));
}

TEST_CASE("layer shapes: a --params model runs no tp, pp, cp or interleaving") {
  Fixture f;
  f.model = test::params_only(7e9);
  CHECK(breaks(f, good(), RuleId::layer_shapes_needed));
  CHECK(check_plan(test::plan(64, 1, 1), f.context()).empty());
}

TEST_CASE("expert parallel must divide the experts and dp x cp") {
  Fixture f;
  f.model = load_model("mixtral-8x7b");
  ParallelPlan p = good();
  p.ep = 8;
  CHECK_FALSE(breaks(f, p, RuleId::ep_divides));
  p.ep = 16;
  CHECK(breaks(f, p, RuleId::ep_divides));
}

TEST_CASE("a Mamba-2 hybrid: tp divides its heads and groups; no context parallel over it") {
  // Nemotron-H-8B: 128 Mamba heads in 8 groups (MambaMixer splits both over tp).
  Fixture f;
  f.model = load_model("nemotron-h-8b");
  f.rules.allow_tp_across_nodes = true;
  ParallelPlan p = good();
  CHECK_FALSE(breaks(f, p, RuleId::tp_divides_recurrent_heads));  // tp 8
  p.tp = 16, p.dp = 4;
  CHECK(breaks(f, p, RuleId::tp_divides_recurrent_heads));  // 16 does not divide 8 groups
  CHECK_FALSE(breaks(f, p, RuleId::tp_divides_heads));      // 32 attention heads it does
  ParallelPlan c = test::plan(32, 1, 1);
  c.cp = 2;
  CHECK(breaks(f, c, RuleId::cp_over_recurrent_layers));
  Fixture dense;  // Llama-2-70B: softmax attention only
  CHECK_FALSE(breaks(dense, c, RuleId::cp_over_recurrent_layers));
}

TEST_CASE("fp8 on an A100 breaks precision_supported; on an H100 it runs") {
  Fixture f;
  set_precision(f.training, Precision::fp8);
  CHECK(breaks(f, good(), RuleId::precision_supported));
  f.cluster = test::cluster(64, "dgx-h100");
  CHECK(check_plan(good(), f.context()).empty());
}

TEST_CASE("framework rules come from the profiles") {
  Fixture f;
  auto as = [&](Framework fw) {
    f.training.framework = load_framework(fw);
    return f;
  };
  ParallelPlan zero3_pp = test::plan(8, 1, 8);
  zero3_pp.zero = 3;
  CHECK(breaks(as(Framework::megatron), zero3_pp, RuleId::framework_zero_with_pp));
  CHECK(breaks(as(Framework::deepspeed), zero3_pp, RuleId::framework_zero_with_pp));
  CHECK_FALSE(breaks(as(Framework::torchtitan), zero3_pp, RuleId::framework_zero_with_pp));
  CHECK(breaks(as(Framework::fsdp), zero3_pp, RuleId::framework_pp));

  ParallelPlan interleaved = test::plan(2, 8, 4);
  interleaved.zero = 1;
  interleaved.interleave = 2;
  CHECK(breaks(as(Framework::deepspeed), interleaved, RuleId::framework_schedule));
  CHECK_FALSE(breaks(as(Framework::megatron), interleaved, RuleId::framework_schedule));

  CHECK(breaks(as(Framework::torchtitan), good(), RuleId::framework_zero_stage));  // no ZeRO-1
  ParallelPlan ddp_tp = good();
  ddp_tp.zero = 0;
  CHECK(breaks(as(Framework::torchtitan), ddp_tp, RuleId::framework_replicate_1d));
  CHECK(breaks(as(Framework::fsdp), ddp_tp, RuleId::framework_replicate_1d));

  ParallelPlan sp = good();
  sp.sequence_parallel = true;
  CHECK(breaks(as(Framework::deepspeed), sp, RuleId::framework_sequence_parallel));
  CHECK(breaks(as(Framework::fsdp), sp, RuleId::framework_sequence_parallel));

  ParallelPlan cp = test::plan(4, 8, 1);
  cp.cp = 2;
  cp.zero = 1;
  CHECK(breaks(as(Framework::deepspeed), cp, RuleId::framework_cp));
  // DeepSpeed's context parallelism is Ulysses (sequence_parallel_size); torchtitan's is ring
  // attention only.
  Fixture ulysses = as(Framework::deepspeed);
  ulysses.training.context_parallel = ContextParallel::ulysses;
  CHECK_FALSE(breaks(ulysses, cp, RuleId::framework_cp));
  Fixture titan_ulysses = as(Framework::torchtitan);
  titan_ulysses.training.context_parallel = ContextParallel::ulysses;
  CHECK(breaks(titan_ulysses, cp, RuleId::framework_cp));
  // Ulysses splits each TP rank's heads over the cp ranks: Llama-2-70B's 64 heads over tp 8
  // leave 8 a rank, which cp 2 divides and cp 3 does not (on 48 GPUs, tp 8 x cp 3 x dp 2).
  CHECK_FALSE(breaks(ulysses, cp, RuleId::ulysses_divides_heads));
  ParallelPlan cp3 = test::plan(2, 8, 1);
  cp3.cp = 3;
  Fixture on48 = ulysses;
  on48.cluster = test::cluster(48);
  on48.training = test::training(3 * 4096, 64);
  on48.training.context_parallel = ContextParallel::ulysses;
  on48.training.framework = load_framework(Framework::deepspeed);
  CHECK(breaks(on48, cp3, RuleId::ulysses_divides_heads));

  // DeepSpeed shards experts by AutoEP (docs/code-docs/source/moe.rst): its presets' families
  // only (Mixtral is one, gpt-oss is not), ZeRO stages 0-2, and no tensor parallelism beside it.
  Fixture moe = as(Framework::deepspeed);
  moe.model = load_model("mixtral-8x7b");
  ParallelPlan ep = test::plan(64, 1, 1);
  ep.zero = 1;
  ep.ep = 8;
  CHECK(check_plan(ep, moe.context()).empty());
  ParallelPlan ep_zero3 = ep;
  ep_zero3.zero = 3;
  CHECK(breaks(moe, ep_zero3, RuleId::framework_zero_stage));
  ParallelPlan zero3 = test::plan(64, 1, 1);
  zero3.zero = 3;
  CHECK(check_plan(zero3, moe.context()).empty());  // ZeRO-3 stays open without ep
  ParallelPlan ep_tp = good();
  ep_tp.ep = 8;
  CHECK(breaks(moe, ep_tp, RuleId::framework_ep));
  Fixture oss = as(Framework::deepspeed);
  oss.model = load_model("gpt-oss-120b");
  CHECK(oss.model.model_type == "gpt_oss");
  CHECK(breaks(oss, ep, RuleId::framework_ep));
  oss.training.framework = load_framework(Framework::megatron);
  CHECK_FALSE(breaks(oss, ep, RuleId::framework_ep));

  Fixture h100 = as(Framework::deepspeed);
  h100.cluster = test::cluster(64, "dgx-h100");
  set_precision(h100.training, Precision::fp8);
  CHECK(breaks(h100, good(), RuleId::framework_fp8));
  Fixture fp16 = as(Framework::torchtitan);
  set_precision(fp16.training, Precision::fp16);
  ParallelPlan z3 = good();
  z3.zero = 3;
  CHECK(breaks(fp16, z3, RuleId::framework_fp16));
  Fixture pure = as(Framework::megatron);
  set_precision(pure.training, Precision::bf16_pure);
  CHECK(breaks(pure, good(), RuleId::framework_bf16_pure));
  pure.training.framework = load_framework(Framework::fsdp);
  CHECK_FALSE(breaks(pure, z3, RuleId::framework_bf16_pure));

  Fixture no_tp = as(Framework::megatron);
  no_tp.training.framework.caps.tensor_parallel = false;
  CHECK(breaks(no_tp, good(), RuleId::framework_tp));
  Fixture no_cross = as(Framework::megatron);
  no_cross.training.framework.caps.tp_across_nodes = false;
  no_cross.rules.allow_tp_across_nodes = true;
  ParallelPlan wide = good();
  wide.tp = 16, wide.dp = 4;
  wide.zero = 1;
  no_cross.model.heads = 64;
  CHECK(breaks(no_cross, wide, RuleId::framework_tp_across_nodes));
}

TEST_CASE("torchtitan offloads only inside FSDP: weights sharded over 2 or more ranks") {
  // torchtitan v0.2.2 passes training.enable_cpu_offload to apply_fsdp, which parallelize_llama
  // calls only when data_parallel_shard_degree > 1 (profile offload.min_shard_ranks 2).
  Fixture f;
  f.training.framework = load_framework(Framework::torchtitan);
  CHECK(f.training.framework.caps.offload.min_shard_ranks == 2);
  ParallelPlan one = test::plan(1, 8, 1);  // dp 1: FSDP over one rank is not applied
  one.zero = 3;
  one.offload.optimizer = one.offload.params = true;
  f.cluster = test::cluster(8, "dgx-h100");
  CHECK(breaks(f, one, RuleId::framework_offload_shards));
  ParallelPlan eight = test::plan(8, 1, 1);
  eight.zero = 3;
  eight.offload = one.offload;
  CHECK_FALSE(breaks(f, eight, RuleId::framework_offload_shards));
  // No offload asked: nothing to refuse.
  CHECK_FALSE(breaks(f, test::plan(1, 8, 1), RuleId::framework_offload_shards));
  f.training.framework = load_framework(Framework::deepspeed);  // ZeRO-Offload on one GPU
  CHECK_FALSE(breaks(f, one, RuleId::framework_offload_shards));
}

namespace {

// Whether check_plan, first_broken, the emitters' words and the search over this one point
// (memory taken out of the question) agree on the plan; returns whether it can run.
bool rules_agree(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                 const ParallelPlan& p, const PlanRules& rules) {
  const RuleContext ctx{m, tr, c, rules};
  const bool ok = check_plan(p, ctx).empty();
  CAPTURE(describe(p));
  CAPTURE(to_string(tr.precision));
  CHECK(ok == !first_broken(p, ctx).has_value());
  CHECK(ok == plan_problems(p, ctx).empty());
  SearchSpace one;
  one.tp = {p.tp};
  one.pp = {p.pp};
  one.cp = {p.cp};
  one.ep = {p.ep};
  one.zero = {p.zero};
  one.micro_batch = {p.micro_batch};
  one.interleave = {p.interleave};
  one.schedule = {p.schedule};
  one.lighter_ends = {false};
  one.recompute = {p.recompute};
  one.sequence_parallel = {p.sequence_parallel};
  ClusterSpec roomy = c;
  roomy.gpu.memory_bytes = 1e18;
  SearchOptions so;
  so.threads = 1;
  so.rules = rules;
  const bool searched = p.gpus() == c.gpus && search(m, tr, roomy, one, so).modelled == 1;
  CHECK(ok == searched);
  return ok;
}

}  // namespace

TEST_CASE("check_plan, the search and emit agree on 4,000 random plans") {
  std::mt19937 rng(20261130);
  const std::vector<std::string> models = {"llama-2-70b", "gpt3-175b", "mixtral-8x7b",
                                           "llama-3.1-8b"};
  const std::vector<int> degrees = {1, 2, 3, 4, 8, 16};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  int runnable = 0, refused = 0, pure_runnable = 0, pure_refused = 0;
  for (int i = 0; i < 4000; ++i) {
    const ModelSpec m = load_model(pick(models));
    TrainingSpec tr = test::training(pick(std::vector<int>{2048, 4096, 6000}),
                                     pick(std::vector<int>{16, 64, 96, 512}));
    const Framework fw = static_cast<Framework>(rng() % kFrameworks);
    tr.framework = load_framework(fw);
    set_precision(tr, rng() % 4 == 0   ? Precision::fp8
                      : rng() % 5 == 0 ? Precision::fp16
                                       : Precision::bf16);
    const ClusterSpec c =
        test::cluster(pick(std::vector<int>{8, 64, 128}), rng() % 2 ? "dgx-a100" : "dgx-h100");
    ParallelPlan p;
    p.tp = pick(degrees), p.pp = pick(degrees), p.cp = pick(std::vector<int>{1, 1, 2});
    p.dp = std::max(1, c.gpus / (p.tp * p.pp * p.cp));
    p.ep = pick(std::vector<int>{1, 1, 2, 8});
    p.zero = static_cast<int>(rng() % 4);
    p.micro_batch = pick(std::vector<int>{1, 2, 3});
    p.interleave = pick(std::vector<int>{1, 1, 2, 5});
    p.sequence_parallel = rng() % 2;
    // torchtitan has no switch: its plans run sequence parallel whenever tp > 1.
    if (tr.framework.caps.sequence_parallel_always && p.tp > 1) p.sequence_parallel = true;
    p.recompute = Recompute::full;
    PlanRules rules;
    rules.allow_tp_across_nodes = rng() % 4 == 0;
    const bool ok = rules_agree(m, tr, c, p, rules);
    (ok ? runnable : refused)++;
    if (tr.precision != Precision::bf16) continue;
    // The same plan in pure bf16 runs exactly when it runs in bf16 and the framework has the
    // capability (fsdp, torchtitan), and every check agrees on it too.
    TrainingSpec pure = tr;
    set_precision(pure, Precision::bf16_pure);
    const bool pure_ok = rules_agree(m, pure, c, p, rules);
    CHECK(pure_ok == (ok && tr.framework.caps.bf16_pure));
    (pure_ok ? pure_runnable : pure_refused)++;
  }
  CHECK(runnable > 100);  // both outcomes are well represented
  CHECK(refused > 100);
  CHECK(pure_runnable > 20);
  CHECK(pure_refused > 100);
}

TEST_CASE("layout-, pipeline- and zero-scope rules read only their fields: first_broken agrees") {
  // The search asks the layout rules once per group of points (RuleScope::layout), the pipeline
  // rules once per pipeline of the group (RuleScope::pipeline), the zero rules once per ZeRO
  // stage of a pipeline (RuleScope::zero) and the rest per point. A rule marked layout, pipeline
  // or zero that reads any other field would give its stand-in (the same fields of its scope,
  // every other field different) another answer than the plan.
  std::mt19937 rng(20261206);
  const std::vector<std::string> models = {"llama-2-70b", "mixtral-8x7b", "deepseek-v3",
                                           "nemotron-h-8b", "llama-3.1-8b"};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  const std::vector<int> degrees = {1, 2, 3, 4, 8, 16};
  int layout_answers = 0, pipeline_answers = 0, zero_answers = 0, point_answers = 0, none = 0;
  int counted_whole = 0;  // plans whose decided rule comes before every point rule
  for (int i = 0; i < 6000; ++i) {
    const ModelSpec m = load_model(pick(models));
    TrainingSpec tr = test::training(pick(std::vector<int>{2048, 4096, 6000}),
                                     pick(std::vector<int>{16, 64, 96, 512}));
    tr.framework = load_framework(static_cast<Framework>(rng() % kFrameworks));
    set_precision(tr, rng() % 4 == 0 ? Precision::fp8 : Precision::bf16);
    if (rng() % 3 == 0) tr.context_parallel = ContextParallel::ulysses;
    if (rng() % 3 == 0) tr.moe_dispatcher = MoeDispatcher::deepep;
    const ClusterSpec c =
        test::cluster(pick(std::vector<int>{8, 64, 128}), rng() % 2 ? "dgx-a100" : "dgx-h100");
    PlanRules rules;
    rules.allow_tp_across_nodes = rng() % 4 == 0;
    const RuleContext ctx{m, tr, c, rules};
    ParallelPlan p;
    p.tp = pick(degrees), p.pp = pick(degrees), p.cp = pick(std::vector<int>{1, 1, 2, 4});
    p.dp = std::max(1, c.gpus / (p.tp * p.pp * p.cp));
    if (rng() % 8 == 0) p.dp = pick(std::vector<int>{0, 3});  // a degree below 1, a wrong count
    p.ep = pick(std::vector<int>{1, 1, 2, 8});
    p.etp = pick(std::vector<int>{0, 0, 1, 2});
    p.zero = static_cast<int>(rng() % 4);
    p.micro_batch = pick(std::vector<int>{1, 2, 3});
    p.interleave = pick(std::vector<int>{1, 1, 2, 5});
    p.schedule = pick(all_schedules());
    if (rng() % 4 == 0) {
      p.first_stage_layers = pick(std::vector<int>{-1, 1, 3});
      p.last_stage_layers = pick(std::vector<int>{-1, 0, 2, 40});
    }
    p.sequence_parallel = rng() % 2;
    p.recompute =
        pick(std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full});
    p.moe_a2a_overlap = rng() % 4 == 0;
    // The layout's stand-in: the layout's degrees, every other field unlike the plan's.
    ParallelPlan layout;
    layout.tp = p.tp, layout.cp = p.cp, layout.ep = p.ep, layout.etp = p.etp;
    layout.micro_batch = p.micro_batch, layout.sequence_parallel = p.sequence_parallel;
    layout.dp = p.dp + 7, layout.pp = p.pp + 5, layout.zero = (p.zero + 1) % 4;
    layout.interleave = p.interleave + 3, layout.recompute = Recompute::full;
    layout.schedule = p.schedule == Schedule::gpipe ? Schedule::zb_v : Schedule::gpipe;
    // The pipeline's stand-in: the plan's layout and pipeline, every point field unlike it.
    ParallelPlan pipeline = p;
    pipeline.zero = (p.zero + 2) % 4;
    pipeline.recompute = p.recompute == Recompute::full ? Recompute::none : Recompute::full;
    pipeline.recompute_modules = 0b101;
    pipeline.moe_a2a_overlap = !p.moe_a2a_overlap;
    pipeline.offload.optimizer = true;
    pipeline.dp_shard = 2;
    // The ZeRO stage's stand-in: the plan's pipeline and ZeRO stage, every other field unlike it.
    ParallelPlan zero = pipeline;
    zero.zero = p.zero;
    const int decided = std::min({first_broken_rule_of(RuleScope::layout, layout, ctx),
                                  first_broken_rule_of(RuleScope::pipeline, pipeline, ctx),
                                  first_broken_rule_of(RuleScope::zero, zero, ctx)});
    const std::optional<RuleId> plain = first_broken(p, ctx);
    CHECK(first_broken(p, ctx, decided) == plain);
    // What the search counts without visiting: a decided rule before every point rule is the
    // plan's first broken rule.
    if (decided < first_point_rule()) {
      ++counted_whole;
      CHECK(plain == static_cast<RuleId>(decided));
    }
    if (!plain)
      ++none;
    else if (plan_rules()[static_cast<size_t>(*plain)].scope == RuleScope::layout)
      ++layout_answers;
    else if (plan_rules()[static_cast<size_t>(*plain)].scope == RuleScope::pipeline)
      ++pipeline_answers;
    else if (plan_rules()[static_cast<size_t>(*plain)].scope == RuleScope::zero)
      ++zero_answers;
    else
      ++point_answers;
  }
  CHECK(layout_answers > 200);  // each kind of answer well represented
  CHECK(pipeline_answers > 200);
  CHECK(zero_answers > 20);  // 36 and 38 of 6000: the ZeRO rules were point rules before
  CHECK(point_answers > 20);
  CHECK(counted_whole > 1000);  // 5870: the plans the search counts without visiting
  CHECK(none >= 5);  // most random plans break a rule; some keep them all
}

TEST_CASE("each rule's row names it: one snake_case name per rule, the JSON keys of the counts") {
  std::set<std::string> names;
  for (int i = 0; i < kRules; ++i) {
    const std::string name = to_string(static_cast<RuleId>(i));
    CAPTURE(i);
    CHECK(!name.empty());
    CHECK(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos);
    CHECK(names.insert(name).second);
  }
  CHECK(std::string(to_string(RuleId::degrees_positive)) == "degrees_positive");
  CHECK(std::string(to_string(RuleId::tp_divides_heads)) == "tp_divides_heads");
  CHECK(std::string(to_string(RuleId::framework_hsdp)) == "framework_hsdp");
  CHECK(std::string(to_string(static_cast<RuleId>(kRules))).empty());
}
