// torchtitan v0.2.2 and DeepSpeed conformance: the start-up checks of each launcher, transcribed
// with their sources, over a grid of models (dense, GQA, MoE, MLA) and plans. torchtitan at tag
// v0.2.2; DeepSpeed deepspeedai/DeepSpeed master (v0.19.x).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <toml++/toml.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "shardplan/emit.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

EmitInputs grid_inputs(const char* model, const char* cluster, int gpus, int tp, int pp, int ep,
                       int zero, Framework f, bool offload = false) {
  const ModelSpec m = load_model(model);
  const ClusterSpec c = test::cluster(gpus, cluster);
  TrainingSpec t = test::training(m.seq_len, 512);
  t.framework = load_framework(f);
  ParallelPlan p = test::plan(gpus / (tp * pp), tp, pp);
  p.ep = ep;
  p.zero = zero;
  p.recompute = Recompute::full;
  p.sequence_parallel = tp > 1;
  p.offload.optimizer = p.offload.params = offload;
  RunbookOptions o;
  o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
  EmitInputs in{m, c, t, p, estimate(m, t, p, c), {}, {}, "flags", ""};
  in.runbook = plan_runbook(m, t, p, c, in.estimate, o);
  in.settings =
      long_run_settings(in.runbook, IntervalChoice::default_interval, kDefaultSeed, false);
  return in;
}

using TitanRule = std::function<std::string(const toml::table&, const EmitInputs&)>;

// torchtitan/models/*/__init__.py @ v0.2.2: the flavors each registered model ships.
const std::map<std::string, std::set<std::string>> kTitanFlavors = {
    {"llama3", {"debugmodel", "8B", "70B", "405B"}},
    {"deepseek_v3", {"debugmodel", "16B", "236B", "671B"}},
    {"qwen3", {"0.6B", "1.7B", "4B", "8B", "14B", "32B", "30B-A3B", "235B-A22B"}},
};

// The flavors' MoEArgs (models/deepseek_v3/__init__.py, models/qwen3/__init__.py @ v0.2.2): the
// MoE model arguments torchtitan takes from the flavor, not the job TOML.
struct TitanMoe {
  int experts, shared, top_k, groups, limited_groups;
  RouterScore score;
  double route_scale;
};
const std::map<std::string, TitanMoe> kTitanMoe = {
    {"deepseek_v3/671B", {256, 1, 8, 8, 4, RouterScore::sigmoid, 2.5}},
    {"qwen3/30B-A3B", {128, 0, 8, 0, 0, RouterScore::softmax, 1.0}},
    {"qwen3/235B-A22B", {128, 0, 8, 0, 0, RouterScore::softmax, 1.0}},
};

std::string titan_moe_flavor(const toml::table& t, const EmitInputs& in) {
  const ModelSpec& m = in.model;
  const std::string key =
      std::string(t["model"]["name"].value_or("")) + "/" + t["model"]["flavor"].value_or("");
  const auto it = kTitanMoe.find(key);
  if (!m.is_moe() || it == kTitanMoe.end()) return "";
  const TitanMoe& f = it->second;
  const int shared = m.ffn_hidden > 0 ? m.shared_ffn_hidden / m.ffn_hidden : 0;
  const double scale = m.router.topk_scale > 0 ? m.router.topk_scale : 1.0;
  const bool same = f.experts == m.experts && f.shared == shared &&
                    f.top_k == m.experts_per_token && f.groups == m.router.groups &&
                    f.limited_groups == m.router.group_topk && f.score == m.router.score &&
                    f.route_scale == scale;
  return same ? "" : key + "'s MoEArgs are not the model's router";
}

const std::vector<std::pair<const char*, TitanRule>>& titan_rules() {
  static const std::vector<std::pair<const char*, TitanRule>> rules = {
      {"parallel_dims.py ParallelDims._validate: dp_replicate x dp_shard x cp x tp x pp = world",
       [](const toml::table& t, const EmitInputs& in) -> std::string {
         const auto& p = *t["parallelism"].as_table();
         const long long product = p["data_parallel_replicate_degree"].value_or(1LL) *
                                   p["data_parallel_shard_degree"].value_or(1LL) *
                                   p["context_parallel_degree"].value_or(1LL) *
                                   p["tensor_parallel_degree"].value_or(1LL) *
                                   p["pipeline_parallel_degree"].value_or(1LL);
         return product == in.cluster.gpus
                    ? ""
                    : fmt::format("{} != world {}", product, in.cluster.gpus);
       }},
      {"train.py: global_batch_size % (local_batch_size x dp degree) == 0",
       [](const toml::table& t, const EmitInputs& in) -> std::string {
         const long long dp = in.plan.dp;
         const long long local = t["training"]["local_batch_size"].value_or(0LL);
         const long long global = t["training"]["global_batch_size"].value_or(0LL);
         return local > 0 && global % (local * dp) == 0 ? "" : "global batch not a multiple";
       }},
      {"protocols/train_spec.py get_train_spec and models/*/__init__.py: a registered model and "
       "flavor, or the note to register one",
       [](const toml::table& t, const EmitInputs&) -> std::string {
         const std::string name = t["model"]["name"].value_or("");
         const std::string flavor = t["model"]["flavor"].value_or("");
         const auto it = kTitanFlavors.find(name);
         return it != kTitanFlavors.end() && it->second.count(flavor) ? "" : name + "/" + flavor;
       }},
      {"models/*/__init__.py MoEArgs: the registered flavor routes as the model does (experts, "
       "shared experts, top-k, node-limited groups, score function, route scale)",
       titan_moe_flavor},
      {"distributed/parallel_dims.py ParallelDims._validate: ETP=TP or ETP=1 when ep > 1; "
       "job_config.py expert_tensor_parallel_degree (default 1) is the plan's expert tp",
       [](const toml::table& t, const EmitInputs& in) -> std::string {
         const auto& p = *t["parallelism"].as_table();
         const long long ep = p["expert_parallel_degree"].value_or(1LL);
         const long long etp = p["expert_tensor_parallel_degree"].value_or(1LL);
         if (ep == 1) return "";
         if (etp != 1 && etp != p["tensor_parallel_degree"].value_or(1LL))
           return "Currently we only support ETP=TP or ETP=1";
         return etp == in.plan.expert_tp() ? "" : "expert tp is not the plan's";
       }},
      {"components/checkpoint.py: keep_latest_k is 0 or >= 2",
       [](const toml::table& t, const EmitInputs&) -> std::string {
         return t["checkpoint"]["keep_latest_k"].value_or(0LL) == 1 ? "keep_latest_k 1" : "";
       }},
      {"job_config.py Training.enable_cpu_offload: applied by apply_fsdp only "
       "(models/llama3/infra/parallelize.py), so it needs data_parallel_shard_degree > 1",
       [](const toml::table& t, const EmitInputs& in) -> std::string {
         const bool offload = t["training"]["enable_cpu_offload"].value_or(false);
         if (offload != in.plan.offload.any()) return "enable_cpu_offload does not match the plan";
         return offload && t["parallelism"]["data_parallel_shard_degree"].value_or(1LL) < 2
                    ? "offload without FSDP"
                    : "";
       }},
      {"job_config.py Optimizer / LRScheduler: lr > 0, 0 <= min_lr_factor <= 1, the recipe's "
       "betas",
       [](const toml::table& t, const EmitInputs& in) -> std::string {
         const double lr = t["optimizer"]["lr"].value_or(0.0);
         const double f = t["lr_scheduler"]["min_lr_factor"].value_or(-1.0);
         const OptimizerSettings o = optimizer_of(in);
         if (lr != o.lr || t["optimizer"]["beta2"].value_or(0.0) != o.beta2)
           return "optimizer is not the recipe's";
         return lr > 0 && f >= 0 && f <= 1 ? "" : "lr or min_lr_factor out of range";
       }},
  };
  return rules;
}

}  // namespace

TEST_CASE("torchtitan v0.2.2 conformance over dense, GQA, MoE and MLA models") {
  const EmitInputs grid[] = {
      grid_inputs("llama-3.1-8b", "dgx-h100", 16, 1, 1, 1, 3, Framework::torchtitan),
      grid_inputs("llama-3.1-70b", "dgx-h100", 64, 8, 2, 1, 2, Framework::torchtitan),
      grid_inputs("qwen3-30b-a3b", "dgx-h100", 32, 1, 1, 8, 3, Framework::torchtitan),
      grid_inputs("deepseek-v3", "h800-deepseek", 2048, 1, 16, 64, 2, Framework::torchtitan),
      grid_inputs("qwen3-235b-a22b", "dgx-h100", 256, 4, 2, 8, 3, Framework::torchtitan),
      grid_inputs("llama-3.1-8b", "dgx-h100", 16, 1, 1, 1, 3, Framework::torchtitan, true),
  };
  for (const EmitInputs& in : grid) {
    const std::string model = in.model.name;
    CAPTURE(model);
    const auto problems = torchtitan_problems(in);
    REQUIRE_MESSAGE(problems.empty(), problems.front().message);
    const toml::table t = toml::parse(emit_text(LauncherFormat::torchtitan, in));
    for (const auto& entry : titan_rules()) {
      const auto& [source, rule] = entry;
      const std::string cited(source);  // CAPTURE cannot name a structured binding (clang 14)
      CAPTURE(cited);
      CHECK(rule(t, in) == "");
    }
  }
}

TEST_CASE("DeepSpeed conformance: batch identity and ZeRO-3's overlap_comm default") {
  // runtime/config.py DeepSpeedConfig._batch_assertion: train_batch_size = micro x gas x dp;
  // zero/config.py DeepSpeedZeroConfig.overlap_comm_valid: stage 3 defaults to true.
  const EmitInputs grid[] = {
      grid_inputs("llama-3.1-8b", "dgx-h100", 16, 1, 1, 1, 3, Framework::deepspeed),
      grid_inputs("llama-3.1-8b", "dgx-h100", 16, 1, 1, 1, 1, Framework::deepspeed),
      grid_inputs("mixtral-8x7b", "dgx-h100", 64, 1, 1, 1, 3, Framework::deepspeed),
  };
  for (const EmitInputs& in : grid) {
    REQUIRE(deepspeed_problems(in).empty());
    const auto j = nlohmann::json::parse(emit_text(LauncherFormat::deepspeed, in));
    CHECK(j.at("train_batch_size").get<int>() ==
          j.at("train_micro_batch_size_per_gpu").get<int>() *
              j.at("gradient_accumulation_steps").get<int>() * in.plan.dp);
    if (in.plan.zero == 3) CHECK(j.at("zero_optimization").at("overlap_comm") == true);
    CHECK(j.at("gradient_clipping").get<double>() == optimizer_of(in).clip_grad);
  }
}

TEST_CASE("torchtitan: DeepSeek-V3 and Qwen3-30B-A3B emit as v0.2.2's own flavors") {
  const auto ds = toml::parse(emit_text(
      LauncherFormat::torchtitan,
      grid_inputs("deepseek-v3", "h800-deepseek", 2048, 1, 16, 64, 2, Framework::torchtitan)));
  CHECK(ds["model"]["name"].value_or("") == std::string("deepseek_v3"));
  CHECK(ds["model"]["flavor"].value_or("") == std::string("671B"));
  const auto qwen = toml::parse(
      emit_text(LauncherFormat::torchtitan,
                grid_inputs("qwen3-30b-a3b", "dgx-h100", 32, 1, 1, 8, 3, Framework::torchtitan)));
  CHECK(qwen["model"]["name"].value_or("") == std::string("qwen3"));
  CHECK(qwen["model"]["flavor"].value_or("") == std::string("30B-A3B"));
}

// The launcher table: every format once, each framework launched by one format, and the parser,
// the names and the --format help read from it (the help text as it stood before the table).
TEST_CASE("launcher table: one row per format, the framework it launches and the --format help") {
  const std::vector<LauncherRow>& rows = launcher_rows();
  REQUIRE(rows.size() == 4);
  for (const LauncherRow& r : rows) {
    CHECK(parse_launcher_format(r.name, "--format") == r.format);
    CHECK(default_format(framework_of(r.format)) == r.format);
  }
  CHECK(default_format(Framework::fsdp) == LauncherFormat::accelerate);
  CHECK(framework_of(LauncherFormat::accelerate) == Framework::fsdp);
  CHECK(std::string(launcher_row(LauncherFormat::deepspeed).usual_file) == "ds_config.json");
  CHECK(launcher_format_help() ==
        "deepspeed | megatron | torchtitan | accelerate (default: the plan's framework's "
        "launcher; fsdp: accelerate)");
  CHECK_THROWS_WITH(parse_launcher_format("nemo", "--format"),
                    doctest::Contains("use deepspeed, megatron, torchtitan or accelerate"));
  for (const FrameworkRow& f : kFrameworkRows)
    CHECK(parse_framework(f.name, "--framework") == f.id);
  CHECK_THROWS_WITH(parse_framework("jax", "--framework"),
                    doctest::Contains("use megatron, deepspeed, torchtitan or fsdp"));
}
