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
std::string error_field(const nlohmann::json& j, PlanPick pick = PlanPick::recommended) {
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
  const PlanFile f = read_plan_file(w.json.dump(), "plan.json", PlanPick::recommended);
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
  const PlanFile f = read_plan_file(w.json.dump(), "p.json", PlanPick::recommended);
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
  CHECK(read_plan_file(j.dump(), "plan.json", PlanPick::recommended).plan.zero == 1);
  const PlanFile f = read_plan_file(j.dump(), "plan.json", PlanPick::fastest);
  CHECK(f.plan.zero == 0);
  CHECK(f.where == "plan.json: fastest");
  CHECK(error_field(w.json, PlanPick::fastest) == "--pick");  // an estimate file has one plan
  j["recommended"] = nullptr;                                 // plan --json when no rung fits
  CHECK(error_field(j) == "plan.json: recommended");
  CHECK(read_plan_file(j.dump(), "plan.json", PlanPick::fastest).plan.zero == 0);
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
  CHECK_THROWS_AS(read_plan_file("{not json", "plan.json", PlanPick::recommended), InputError);
  CHECK_THROWS_AS(read_plan_file("[1, 2]", "plan.json", PlanPick::recommended), InputError);
}
