// Plan files: what estimate --json (and plan --json) write reads back into the same specs, and
// anything else is an error that names the field.
#include "shardplan/plan_file.hpp"

#include <doctest/doctest.h>

#include "shardplan/error.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/render_estimate.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

struct Written {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  nlohmann::json json;  // as `shardplan estimate --json` prints it
};

Written estimate_file(const ModelSpec& m, TrainingSpec t, const ParallelPlan& p,
                      const ClusterSpec& c) {
  const Estimate e = estimate(m, t, p, c);
  nlohmann::json j = to_json(e, p, t, c);
  j["model"] = to_json(m);
  j["cluster"] = to_json(c);
  j["plan"] = to_json(p);
  j["training"] = to_json(t);
  return {m, c, t, p, j};
}

Written gpt3_file() {
  ParallelPlan p = test::plan(16, 8, 8);
  p.zero = 1;
  p.recompute = Recompute::full;
  return estimate_file(load_model("gpt3-175b"), test::training(2048, 1536), p, test::cluster(1024));
}

// The field of the InputError that reading `j` throws ("" when it reads).
std::string error_field(const nlohmann::json& j, PlanPick pick = PlanPick::recommended()) {
  try {
    read_plan_file(j.dump(), "plan.json", pick);
  } catch (const InputError& e) {
    return e.field();
  }
  return "";
}

}  // namespace

TEST_CASE("an estimate --json file reads back into the same specs") {
  const Written w = gpt3_file();
  const PlanFile f = read_plan_file(w.json.dump(), "plan.json", PlanPick::recommended());
  CHECK(f.where == "plan.json");
  CHECK(f.plan.dp == 16);
  CHECK(f.plan.tp == 8);
  CHECK(f.plan.pp == 8);
  CHECK(f.plan.zero == 1);
  CHECK(f.plan.recompute == Recompute::full);
  CHECK(f.training.global_batch == 1536);
  CHECK(f.training.seq_len == 2048);
  CHECK(f.cluster.gpus == 1024);
  CHECK(f.cluster.gpus_per_node == 8);
  CHECK(f.cluster.gpu.name == "A100-80GB");
  CHECK(count_params(f.model).total == count_params(w.model).total);
  // Same specs, same prediction.
  CHECK(estimate(f.model, f.training, f.plan, f.cluster).time.step_s ==
        doctest::Approx(f.step_s).epsilon(1e-12));
}

TEST_CASE("typed bandwidths, --params models and tokens survive the round trip") {
  ClusterOptions o;
  o.gpu = "H100-SXM";
  o.link = "10Gbit/s";
  o.gpus = 8;
  ModelSpec m;
  m.params_only = 7e9;
  TrainingSpec t = test::training(4096, 64);
  t.tokens = 1e12;
  const Written w = estimate_file(m, t, test::plan(8, 1, 1), build_cluster(o));
  const PlanFile f = read_plan_file(w.json.dump(), "p.json", PlanPick::recommended());
  CHECK(f.model.params_only == 7e9);
  CHECK_FALSE(f.model.has_architecture());
  CHECK(f.cluster.inter.bytes_per_s == 1.25e9);
  CHECK(f.cluster.inter.user_given);
  CHECK(f.training.tokens == 1e12);
}

TEST_CASE("a plan --json file: recommended by default, fastest on request") {
  const Written w = gpt3_file();
  nlohmann::json j = {{"model", w.json["model"]},
                      {"cluster", w.json["cluster"]},
                      {"training", w.json["training"]},
                      {"ladder", nlohmann::json::array()},
                      {"search", nlohmann::json::object()}};
  j["recommended"] = {
      {"plan", w.json["plan"]}, {"time", w.json["time"]}, {"rung", "pipeline parallel"}};
  ParallelPlan fast = w.plan;
  fast.zero = 0;
  j["fastest"] = {{"plan", to_json(fast)}, {"time", w.json["time"]}};
  CHECK(read_plan_file(j.dump(), "plan.json", PlanPick::recommended()).plan.zero == 1);
  const PlanFile f = read_plan_file(j.dump(), "plan.json", PlanPick::fastest());
  CHECK(f.plan.zero == 0);
  CHECK(f.where == "plan.json: fastest");
  CHECK(error_field(w.json, PlanPick::fastest()) == "--pick");  // an estimate file has one plan
  j["recommended"] = nullptr;                                 // plan --json when no rung fits
  CHECK(error_field(j) == "plan.json: recommended");
  CHECK(read_plan_file(j.dump(), "plan.json", PlanPick::fastest()).plan.zero == 0);
}

TEST_CASE("a plan --json file's ranked list: --pick N takes the plan ranked N") {
  const Written w = gpt3_file();
  nlohmann::json j = {{"model", w.json["model"]},
                      {"cluster", w.json["cluster"]},
                      {"training", w.json["training"]},
                      {"recommended", {{"plan", w.json["plan"]}, {"time", w.json["time"]}}}};
  ParallelPlan second = w.plan;
  second.zero = 0;
  j["ranked"] = nlohmann::json::array({{{"plan", w.json["plan"]}, {"time", w.json["time"]}},
                                       {{"plan", to_json(second)}, {"time", w.json["time"]}}});
  const PlanFile f = read_plan_file(j.dump(), "plan.json", parse_plan_pick("2", "--pick"));
  CHECK(f.plan.zero == 0);
  CHECK(f.where == "plan.json: ranked #2");
  CHECK(read_plan_file(j.dump(), "plan.json", PlanPick::ranked(1)).plan.zero == 1);
  // Past the list, a rank of 0, or a word that is not a choice: --pick, with what is valid.
  CHECK(error_field(j, PlanPick::ranked(3)) == "--pick");
  CHECK_THROWS_WITH_AS(read_plan_file(j.dump(), "plan.json", PlanPick::ranked(3)),
                       doctest::Contains("pick 1 to 2"), InputError);
  CHECK_THROWS_AS(parse_plan_pick("0", "--pick"), InputError);
  CHECK_THROWS_AS(parse_plan_pick("-1", "--pick"), InputError);
  CHECK_THROWS_AS(parse_plan_pick("slowest", "--pick"), InputError);
  CHECK_THROWS_AS(parse_plan_pick("99999999999", "--pick"), InputError);
  // An estimate --json file has no ranked list to pick from.
  CHECK(error_field(w.json, PlanPick::ranked(1)) == "--pick");
}

TEST_CASE("bad plan files are errors naming the field") {
  const Written w = gpt3_file();
  auto with = [&](auto edit) {
    nlohmann::json j = w.json;
    edit(j);
    return j;
  };
  CHECK(error_field(with([](auto& j) { j.erase("cluster"); })) == "plan.json: cluster");
  CHECK(error_field(with([](auto& j) { j.erase("plan"); })) == "plan.json: recommended");
  CHECK(error_field(with([](auto& j) { j["plan"]["tp_degree"] = 8; })) ==
        "plan.json: plan: tp_degree");
  CHECK(error_field(with([](auto& j) { j["plan"].erase("zero"); })) == "plan.json: plan: zero");
  CHECK(error_field(with([](auto& j) { j["plan"]["dp"] = "16"; })) == "plan.json: plan: dp");
  CHECK(error_field(with([](auto& j) { j["plan"]["gpus"] = 512; })) == "plan.json: plan: gpus");
  CHECK(error_field(with([](auto& j) { j["model"]["params"] = 1.75e11; })) ==
        "plan.json: model: params");
  CHECK(error_field(with([](auto& j) { j["model"]["mlp"] = "relu"; })) == "plan.json: model: mlp");
  CHECK(error_field(with([](auto& j) { j["cluster"]["gpu"]["name"] = "Z100"; })) ==
        "plan.json: cluster: gpu: name");
  CHECK(error_field(with([](auto& j) { j["training"]["precision"] = "bf17"; })) ==
        "plan.json: training: precision");
  CHECK(error_field(with([](auto& j) { j["time"]["step_s"] = -1; })) == "plan.json: time.step_s");
  // A plan that cannot run: 1536 sequences do not split over dp 16 x micro-batch 5.
  CHECK(error_field(with([](auto& j) { j["plan"]["micro_batch"] = 5; })).find("plan.json: plan") ==
        0);
  CHECK_THROWS_AS(read_plan_file("{not json", "plan.json", PlanPick::recommended()), InputError);
  CHECK_THROWS_AS(read_plan_file("[1, 2]", "plan.json", PlanPick::recommended()), InputError);
}

// The plan and training objects are written and read by one table of rows (spec_fields.cpp):
// every field set away from its default comes back from to_json -> *_from_json.
TEST_CASE("every field of a non-default plan and training survives write and read") {
  const ParallelPlan p{.dp = 3, .tp = 2, .pp = 4, .cp = 2, .ep = 3, .etp = 1, .zero = 2,
                       .micro_batch = 2, .recompute = Recompute::selective,
                       .sequence_parallel = true, .interleave = 2, .schedule = Schedule::zb_v,
                       .first_stage_layers = 3, .last_stage_layers = 5,
                       .offload = {true, true, true, OffloadTarget::nvme, 2},
                       .moe_a2a_overlap = true};
  const nlohmann::json pj = to_json(p);
  const ParallelPlan q = plan_from_json(pj, "plan");
  CHECK(q.dp == 3);
  CHECK(q.tp == 2);
  CHECK(q.pp == 4);
  CHECK(q.cp == 2);
  CHECK(q.ep == 3);
  CHECK(q.etp == 1);
  CHECK(q.zero == 2);
  CHECK(q.micro_batch == 2);
  CHECK(q.recompute == Recompute::selective);
  CHECK(q.sequence_parallel);
  CHECK(q.interleave == 2);
  CHECK(q.schedule == Schedule::zb_v);
  CHECK(q.first_stage_layers == 3);
  CHECK(q.last_stage_layers == 5);
  CHECK(q.offload.optimizer);
  CHECK(q.offload.params);
  CHECK(q.offload.activations);
  CHECK(q.offload.to == OffloadTarget::nvme);
  CHECK(q.offload.activation_layers == 2);
  CHECK(q.moe_a2a_overlap);
  CHECK(to_json(q) == pj);
  CHECK(pj.at("gpus") == 48);  // 3 x 2 x 4 x 2

  TrainingSpec t{.recipe = {}, .optimizer = OptimizerKind::adam_8bit,
                 .attention = AttentionKind::standard,
                 .seq_len = 4096, .global_batch = 96, .fp32_grads = true,
                 .overlap_grad_reduce = false, .overlap_param_gather = false,
                 .tp_comm_overlap = true, .fragmentation = 0.125, .moe_capacity_factor = 1.25,
                 .moe_max_load = 1.5, .moe_fp8_dispatch = true,
                 .moe_dispatcher = MoeDispatcher::deepep, .tokens = 1e12, .gpu_hour_cost = 2.5,
                 .framework = {}};
  t.framework = load_framework(Framework::megatron);
  set_precision(t, Precision::fp8);
  const nlohmann::json tj = to_json(t);
  const TrainingSpec u = training_from_json(tj, "training");
  CHECK(u.framework.name == "megatron");
  CHECK(u.precision == Precision::fp8);
  CHECK(u.recipe.name == t.recipe.name);
  CHECK(u.optimizer == OptimizerKind::adam_8bit);
  CHECK(u.attention == AttentionKind::standard);
  CHECK(u.seq_len == 4096);
  CHECK(u.global_batch == 96);
  CHECK(u.fp32_grads);
  CHECK_FALSE(u.overlap_grad_reduce);
  CHECK_FALSE(u.overlap_param_gather);
  CHECK(u.tp_comm_overlap);
  CHECK(u.fragmentation == 0.125);
  CHECK(u.tokens == 1e12);
  CHECK(u.gpu_hour_cost == 2.5);
  CHECK(u.moe_capacity_factor == 1.25);
  // Written before the table and refused on reading as unknown keys (a MoE plan's file could
  // not be emitted from): moe_max_load, moe_fp8_dispatch, moe_dispatcher.
  CHECK(u.moe_max_load == 1.5);
  CHECK(u.moe_fp8_dispatch);
  CHECK(u.moe_dispatcher == MoeDispatcher::deepep);
  CHECK(to_json(u) == tj);
}

TEST_CASE("plan rows check what they read") {
  nlohmann::json j = to_json(test::plan(2, 2, 2));
  auto refused = [](const nlohmann::json& plan, const std::string& field) {
    try {
      plan_from_json(plan, "plan");
      FAIL("expected an InputError");
    } catch (const InputError& e) {
      CHECK(e.field() == field);
    }
  };
  nlohmann::json bad = j;
  bad["gpus"] = 16;
  refused(bad, "plan: gpus");
  bad = j;
  bad["offload"] = {{"optimizer", true}, {"params", false}, {"activations", false}, {"to", "tape"}};
  refused(bad, "plan: offload: to");
  bad = j;
  bad.erase("micro_batch");
  refused(bad, "plan: micro_batch");
  bad = j;
  bad.erase("schedule");  // files from before schedules: 1F1B, interleaved when v > 1
  CHECK(plan_from_json(bad, "plan").schedule == Schedule::one_f_one_b);
  nlohmann::json t = to_json(test::training(2048, 64));
  t["fragmentation"] = 1.5;
  try {
    training_from_json(t, "training");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.field() == "training: fragmentation");
  }
}
