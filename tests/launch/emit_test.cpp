// Emitters: every output parses back with the library that reads it (nlohmann/json, bash,
// toml++, yaml-cpp) and encodes the plan's degrees, batch sizes and long-run settings exactly;
// plans a launcher cannot run are problems; golden files pin the whole text.
#include "shardplan/emit.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "shardplan/profiles.hpp"
#include "shardplan/version.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

EmitInputs make_inputs(const ModelSpec& m, const TrainingSpec& t, const ParallelPlan& p,
                       const ClusterSpec& c,
                       IntervalChoice choice = IntervalChoice::default_interval,
                       RunbookOptions o = {}) {
  if (choice == IntervalChoice::default_interval)
    o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
  EmitInputs in{m, c, t, p, estimate(m, t, p, c), {}, {}, "flags", ""};
  in.runbook = plan_runbook(m, t, p, c, in.estimate, o);
  in.settings = long_run_settings(in.runbook, choice, kDefaultSeed, false);
  return in;
}

// GPT-3 175B on 1,024 A100-80GB: tp 8, pp 8, dp 16, global batch 1536, micro-batch 1 (Narayanan
// et al. 2021, Table 1's 175B row uses the same degrees and batch).
EmitInputs gpt3(int zero) {
  ParallelPlan p = test::plan(16, 8, 8);
  p.zero = zero;
  p.recompute = Recompute::full;
  return make_inputs(load_model("gpt3-175b"), test::training(2048, 1536), p, test::cluster(1024));
}

// The same plan as torchtitan runs it: sequence parallel whenever tp > 1
// (profiles/frameworks/torchtitan.json sequence_parallel_always).
EmitInputs as_titan(const EmitInputs& in) {
  ParallelPlan p = in.plan;
  p.sequence_parallel = p.tp > 1;
  return make_inputs(in.model, in.training, p, in.cluster);
}

long expected_interval_steps(const EmitInputs& in) {
  return std::lround(kDefaultCheckpointIntervalS / in.estimate.step_s);
}

bool has_field(const std::vector<PlanProblem>& problems, const std::string& field) {
  for (const auto& p : problems) {
    if (p.field == field) return true;
  }
  return false;
}

std::string temp_path(const std::string& name) {
  return test::make_temp_dir() + "/" + name;
}

// pretrain_gpt.py's arguments as the script passes them: runs the script with a stand-in
// torchrun on PATH that prints one argument per line.
std::map<std::string, std::string> megatron_args(const std::string& script,
                                                 std::vector<std::string>* order = nullptr) {
  const std::string path = temp_path("megatron.sh");
  const std::string dir = path.substr(0, path.rfind('/'));
  test::write_file(path, script);
  test::write_file(dir + "/torchrun",
                   "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$OUT\"\n");
  const std::string cmd = "chmod +x " + dir + "/torchrun && bash -n " + path + " && cd " + dir +
                          " && PATH=" + dir + ":$PATH OUT=" + dir +
                          "/args NODE_RANK=1 MASTER_ADDR=10.0.0.1 CHECKPOINT_DIR=/ckpt "
                          "DATA_PATH=/data/c4 TOKENIZER_MODEL=gpt2 TRAIN_ITERS=1000 bash " +
                          path;
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::istringstream lines(test::read_file(dir + "/args"));
  std::map<std::string, std::string> args;
  std::string line, flag;
  while (std::getline(lines, line)) {
    if (line.rfind("--", 0) == 0) {
      flag = line;
      args[flag] = "";
      if (order) order->push_back(flag);
    } else if (!flag.empty()) {
      // An nargs='*' flag (--recompute-modules) takes every word up to the next flag.
      std::string& v = args[flag];
      v = v.empty() ? line : v + " " + line;
    }
  }
  return args;
}

int num(const std::map<std::string, std::string>& args, const std::string& flag) {
  REQUIRE(args.count(flag) == 1);
  return std::stoi(args.at(flag));
}

}  // namespace

TEST_CASE("each precision recipe row spells itself for launchers by their --format names") {
  for (const PrecisionRecipe& r : all_recipes()) {
    CAPTURE(r.name);
    for (const auto& [launcher, flags] : r.launcher_flags)
      CHECK_NOTHROW(parse_launcher_format(launcher, r.name + ": launchers"));
    // accelerate takes one mixed_precision value (config_args.py: no | fp16 | bf16 | fp8).
    const auto* accelerate = r.flags_for("accelerate");
    REQUIRE(accelerate != nullptr);
    REQUIRE(accelerate->size() == 1);
    CHECK(std::set<std::string>{"no", "fp16", "bf16", "fp8"}.count(accelerate->front()) == 1);
    // Megatron-LM's flags as transformer_config.py and arguments.py spell them, from the row.
    const auto* megatron = r.flags_for("megatron");
    if (r.id == Precision::bf16_pure) {
      CHECK(megatron == nullptr);  // Megatron-LM always keeps an fp32 master copy
    } else {
      REQUIRE(megatron != nullptr);
      const bool fp4 = r.gemm_dtype == MathDtype::fp4, fp8 = r.gemm_dtype == MathDtype::fp8;
      CHECK((std::find(megatron->begin(), megatron->end(), "--fp8-recipe") != megatron->end()) ==
            fp8);
      CHECK((std::find(megatron->begin(), megatron->end(), "--fp4-recipe") != megatron->end()) ==
            fp4);
    }
  }
  // The delayed-scaling row, as Megatron-LM takes it: hybrid E4M3 / E5M2 and the recipe's name.
  CHECK(*load_recipe(Precision::fp8_delayed).flags_for("megatron") ==
        std::vector<std::string>{"--bf16", "--fp8-format", "hybrid", "--fp8-recipe", "delayed"});
}

TEST_CASE("GPT-3 175B, tp 8 x pp 8 x dp 16: DeepSpeed JSON parses back with the plan's numbers") {
  const EmitInputs in = gpt3(1);
  REQUIRE(deepspeed_problems(in).empty());
  const auto j = nlohmann::json::parse(emit_text(LauncherFormat::deepspeed, in));
  CHECK(j.at("train_batch_size") == 1536);
  CHECK(j.at("train_micro_batch_size_per_gpu") == 1);
  CHECK(j.at("gradient_accumulation_steps") == 96);
  CHECK(j.at("zero_optimization").at("stage") == 1);
  CHECK(j.at("bf16").at("enabled") == true);
  const auto& plan = j.at("_shardplan").at("plan");
  CHECK(plan.at("tp") == 8);
  CHECK(plan.at("pp") == 8);
  CHECK(plan.at("dp") == 16);
  // The batch identity DeepSpeed's pipeline engine asserts, and the GPU count.
  CHECK(j.at("train_micro_batch_size_per_gpu").get<int>() *
            j.at("gradient_accumulation_steps").get<int>() * plan.at("dp").get<int>() ==
        j.at("train_batch_size").get<int>());
  CHECK(plan.at("dp").get<int>() * plan.at("tp").get<int>() * plan.at("pp").get<int>() == 1024);
  CHECK(j.at("_shardplan").at("long_run").at("checkpoint_interval_steps") ==
        expected_interval_steps(in));
  CHECK(j.at("pipeline").at("activation_checkpoint_interval") == 1);
  const std::string launch = j.at("_shardplan").at("launch").dump();
  CHECK(launch.find("--num_nodes 128 --num_gpus 8") != std::string::npos);
  CHECK(launch.find("DEEPSPEED_TIMEOUT=10 >> .deepspeed_env") != std::string::npos);
}

TEST_CASE("DeepSpeed JSON for a MoE model: AutoEP's block, or why the experts stay whole") {
  // Mixtral 8x7B on 16 H100s, dp 16 with ZeRO-2 and ep 8: AutoEP's expert_parallel block
  // (docs/code-docs/source/moe.rst: enabled, autoep_size, preset_model).
  ParallelPlan p = test::plan(16, 1, 1);
  p.zero = 2;
  p.ep = 8;
  p.recompute = Recompute::full;
  const EmitInputs in = make_inputs(load_model("mixtral-8x7b"), test::training(4096, 64), p,
                                    test::cluster(16, "dgx-h100"));
  REQUIRE(deepspeed_problems(in).empty());
  const auto j = nlohmann::json::parse(emit_text(LauncherFormat::deepspeed, in));
  CHECK(j.at("expert_parallel") ==
        nlohmann::json{{"enabled", true}, {"autoep_size", 8}, {"preset_model", "mixtral"}});
  CHECK(j.at("_shardplan").at("script").dump().find("1 of the 8 on each rank") !=
        std::string::npos);
  // ep 1: no block, and the script says AutoEP would shard them.
  EmitInputs whole = in;
  whole.plan.ep = 1;
  const auto w = nlohmann::json::parse(emit_text(LauncherFormat::deepspeed, whole));
  CHECK_FALSE(w.contains("expert_parallel"));
  const std::string script = w.at("_shardplan").at("script").dump();
  CHECK(script.find("the 8 experts of each MoE layer stay whole on every rank") != std::string::npos);
  CHECK(script.find("AutoEP would shard them (preset 'mixtral')") != std::string::npos);
}

TEST_CASE("GPT-3 175B: the Megatron-LM script passes pretrain_gpt.py the plan's numbers") {
  const EmitInputs in = gpt3(1);
  REQUIRE(megatron_problems(in).empty());
  const auto args = megatron_args(emit_text(LauncherFormat::megatron, in));
  CHECK(num(args, "--tensor-model-parallel-size") == 8);
  CHECK(num(args, "--pipeline-model-parallel-size") == 8);
  CHECK(num(args, "--micro-batch-size") == 1);
  CHECK(num(args, "--global-batch-size") == 1536);
  CHECK(args.count("--use-distributed-optimizer") == 1);  // ZeRO-1
  CHECK(num(args, "--save-interval") == expected_interval_steps(in));
  CHECK(num(args, "--distributed-timeout-minutes") == 10);
  CHECK(num(args, "--seed") == 1234);
  CHECK(args.at("--save") == "/ckpt");
  CHECK(args.at("--load") == "/ckpt");
  CHECK(num(args, "--num-layers") == 96);
  CHECK(num(args, "--hidden-size") == 12288);
  CHECK(args.at("--recompute-granularity") == "full");
  // Megatron derives dp = world / (tp x pp) and asserts global % (micro x dp) == 0.
  const int dp = 1024 / (8 * 8);
  CHECK(dp == 16);
  CHECK(1536 / (1 * dp) == accumulation_steps(in));
}

TEST_CASE("GPT-3 175B: the torchtitan TOML parses back with the plan's numbers") {
  // torchtitan has no ZeRO-1; FSDP2 with weights kept for backward
  const EmitInputs in = as_titan(gpt3(2));
  REQUIRE(torchtitan_problems(in).empty());
  const std::string text = emit_text(LauncherFormat::torchtitan, in);
  const toml::table t = toml::parse(text);
  CHECK(t["parallelism"]["tensor_parallel_degree"].value<int>() == 8);
  CHECK(t["parallelism"]["pipeline_parallel_degree"].value<int>() == 8);
  CHECK(t["parallelism"]["data_parallel_shard_degree"].value<int>() == 16);
  CHECK(t["parallelism"]["data_parallel_replicate_degree"].value<int>() == 1);
  CHECK(t["parallelism"]["fsdp_reshard_after_forward"].value<std::string>() == "never");
  CHECK(t["parallelism"]["pipeline_parallel_microbatch_size"].value<int>() == 1);
  CHECK(t["training"]["global_batch_size"].value<int>() == 1536);
  // torchtitan: n_microbatches = local / microbatch size; accumulation = global / (local x dp).
  const int local = *t["training"]["local_batch_size"].value<int>();
  CHECK(local / 1 == 96);
  CHECK(1536 / (local * 16) == 1);
  CHECK(t["checkpoint"]["interval"].value<long>() == expected_interval_steps(in));
  CHECK(t["checkpoint"]["keep_latest_k"].value<int>() == 3);
  CHECK(t["checkpoint"]["last_save_model_only"].value<bool>() == false);
  CHECK(t["comm"]["train_timeout_seconds"].value<int>() == 600);
  CHECK(t["debug"]["seed"].value<int>() == 1234);
  CHECK(t["activation_checkpoint"]["mode"].value<std::string>() == "full");
  CHECK(t["parallelism"]["pipeline_parallel_layers_per_stage"].value<int>() == 12);
}

TEST_CASE("GPT-3 175B cannot run under accelerate's FSDP path: no pipeline parallelism") {
  for (int zero : {1, 2, 3}) {
    CAPTURE(zero);
    CHECK(has_field(accelerate_problems(gpt3(zero)), "--pp"));
  }
}

TEST_CASE("accelerate YAML for Llama-3.1-8B with FSDP2 (ZeRO-3) on 16 H100s parses back") {
  ParallelPlan p = test::plan(16, 1, 1);
  p.zero = 3;
  p.recompute = Recompute::full;
  const EmitInputs in = make_inputs(load_model("llama-3.1-8b"), test::training(8192, 256), p,
                                    test::cluster(16, "dgx-h100"));
  REQUIRE(accelerate_problems(in).empty());
  const std::string text = emit_text(LauncherFormat::accelerate, in);
  const YAML::Node y = YAML::Load(text);
  CHECK(y["distributed_type"].as<std::string>() == "FSDP");
  CHECK(y["num_processes"].as<int>() == 16);
  CHECK(y["num_machines"].as<int>() == 2);
  CHECK(y["mixed_precision"].as<std::string>() == "bf16");
  CHECK(y["fsdp_config"]["fsdp_version"].as<int>() == 2);
  CHECK(y["fsdp_config"]["fsdp_reshard_after_forward"].as<bool>() == true);
  CHECK(y["fsdp_config"]["fsdp_activation_checkpointing"].as<bool>() == true);
  CHECK_FALSE(y["parallelism_config"]);
  // Accumulation has no YAML key: the launch line sets the variable Accelerator() reads.
  CHECK(text.find("ACCELERATE_GRADIENT_ACCUMULATION_STEPS=16 accelerate launch") !=
        std::string::npos);
  CHECK(text.find(fmt::format("every {} steps call accelerator.save_state()",
                              expected_interval_steps(in))) != std::string::npos);
  CHECK(text.find("total_limit=3") != std::string::npos);
}

TEST_CASE("bf16-pure: accelerate writes mixed_precision 'no' and says to load the model in bf16") {
  ParallelPlan p = test::plan(8, 1, 1);
  p.zero = 3;
  p.recompute = Recompute::full;
  TrainingSpec t = test::training(4096, 64);
  set_precision(t, Precision::bf16_pure);
  t.framework = load_framework(Framework::fsdp);
  const EmitInputs in = make_inputs(load_model("llama-3.1-8b"), t, p, test::cluster(8, "dgx-h100"));
  REQUIRE(accelerate_problems(in).empty());
  const std::string text = emit_text(LauncherFormat::accelerate, in);
  const YAML::Node y = YAML::Load(text);
  CHECK(y["mixed_precision"].as<std::string>() == "no");
  CHECK(text.find("torch_dtype=torch.bfloat16") != std::string::npos);
  const toml::table tt = toml::parse(emit_text(LauncherFormat::torchtitan, in));
  CHECK(tt["training"]["dtype"].value<std::string>() == "bfloat16");
  CHECK(has_field(megatron_problems(in), "--precision"));  // keeps a master copy
  CHECK(has_field(deepspeed_problems(in), "--precision"));
}

TEST_CASE("accelerate with tensor parallel: parallelism_config multiplies to num_processes") {
  ParallelPlan p = test::plan(8, 2, 1);
  p.zero = 2;
  const EmitInputs in = make_inputs(load_model("llama-3.1-8b"), test::training(8192, 64), p,
                                    test::cluster(16, "dgx-h100"));
  REQUIRE(accelerate_problems(in).empty());
  const YAML::Node y = YAML::Load(emit_text(LauncherFormat::accelerate, in));
  const YAML::Node pc = y["parallelism_config"];
  CHECK(pc["parallelism_config_tp_size"].as<int>() == 2);
  CHECK(pc["parallelism_config_dp_shard_size"].as<int>() == 8);
  CHECK(pc["parallelism_config_dp_replicate_size"].as<int>() *
            pc["parallelism_config_dp_shard_size"].as<int>() *
            pc["parallelism_config_tp_size"].as<int>() *
            pc["parallelism_config_cp_size"].as<int>() ==
        y["num_processes"].as<int>());
  CHECK(y["fsdp_config"]["fsdp_reshard_after_forward"].as<bool>() == false);  // ZeRO-2
}

TEST_CASE("plans a launcher cannot express are problems naming the flag") {
  CHECK(has_field(megatron_problems(gpt3(3)), "--zero"));  // ZeRO-3 (FSDP) with pipeline parallel
  CHECK(has_field(megatron_problems(gpt3(2)), "--zero"));
  CHECK(has_field(deepspeed_problems(gpt3(2)), "--zero"));  // PipelineEngine asserts ZeRO < 2
  CHECK(has_field(deepspeed_problems(gpt3(3)), "--zero"));
  CHECK(has_field(torchtitan_problems(gpt3(1)), "--zero"));  // no ZeRO-1 in FSDP2
  CHECK(has_field(torchtitan_problems(gpt3(0)), "--zero"));  // DDP refuses other parallelisms
  CHECK(megatron_problems(gpt3(0)).empty());
  CHECK(deepspeed_problems(gpt3(0)).empty());
  RunbookOptions one;
  one.keep_last = 1;
  ParallelPlan p = test::plan(8, 1, 1);
  p.zero = 3;
  const EmitInputs keep_one =
      make_inputs(load_model("llama-3.1-8b"), test::training(8192, 8), p,
                  test::cluster(8, "dgx-h100"), IntervalChoice::default_interval, one);
  CHECK(has_field(torchtitan_problems(keep_one), "--keep-last"));  // keep_latest_k = 1 is rejected
  CHECK_FALSE(has_field(deepspeed_problems(keep_one), "--keep-last"));
}

TEST_CASE("--checkpoint-interval auto: the runbook's Young interval in whole steps") {
  ParallelPlan p = test::plan(16, 8, 8);
  p.zero = 1;
  p.recompute = Recompute::full;
  const EmitInputs in = make_inputs(load_model("gpt3-175b"), test::training(2048, 1536), p,
                                    test::cluster(1024), IntervalChoice::young);
  const Runbook& r = in.runbook;
  CHECK(r.checkpoint.interval_s ==
        doctest::Approx(std::sqrt(2 * r.checkpoint.write_s * r.failures.mtbf_s)));
  CHECK(in.settings.checkpoint_interval_steps ==
        std::lround(r.checkpoint.interval_s / in.estimate.step_s));
  const auto args = megatron_args(emit_text(LauncherFormat::megatron, in));
  CHECK(num(args, "--save-interval") == in.settings.checkpoint_interval_steps);
}

TEST_CASE(
    "every accepted plan keeps global = micro x accumulation x dp and dp x tp x pp x cp = GPUs") {
  const ModelSpec m = load_model("gpt3-1.3b");
  const ClusterSpec c = test::cluster(16);
  struct Degrees {
    int dp, tp, pp, zero;
  };
  const Degrees plans[] = {{16, 1, 1, 0}, {16, 1, 1, 1}, {16, 1, 1, 2}, {16, 1, 1, 3},
                           {8, 2, 1, 1},  {8, 2, 1, 3},  {4, 2, 2, 1},  {4, 2, 2, 2},
                           {2, 8, 1, 3},  {4, 1, 4, 0}};
  int accepted = 0;
  for (const Degrees& d : plans) {
    ParallelPlan p = test::plan(d.dp, d.tp, d.pp, 2);
    p.zero = d.zero;
    const EmitInputs in = make_inputs(m, test::training(2048, 256), p, c);
    const int gas = 256 / (2 * d.dp);
    const std::string degrees = fmt::format("dp {} tp {} pp {} ZeRO-{}", d.dp, d.tp, d.pp, d.zero);
    CAPTURE(degrees);
    if (deepspeed_problems(in).empty()) {
      ++accepted;
      const auto j = nlohmann::json::parse(emit_text(LauncherFormat::deepspeed, in));
      CHECK(j["train_micro_batch_size_per_gpu"] == 2);
      CHECK(j["gradient_accumulation_steps"] == gas);
      CHECK(j["zero_optimization"]["stage"] == d.zero);
      CHECK(j["_shardplan"]["plan"]["dp"].get<int>() * d.tp * d.pp == 16);
    }
    if (megatron_problems(in).empty()) {
      ++accepted;
      const auto a = megatron_args(emit_text(LauncherFormat::megatron, in));
      CHECK(num(a, "--global-batch-size") % (num(a, "--micro-batch-size") * (16 / (d.tp * d.pp))) ==
            0);
      CHECK(num(a, "--tensor-model-parallel-size") * num(a, "--pipeline-model-parallel-size") *
                d.dp ==
            16);
    }
    if (const EmitInputs titan = as_titan(in); torchtitan_problems(titan).empty()) {
      ++accepted;
      const toml::table t = toml::parse(emit_text(LauncherFormat::torchtitan, titan));
      const int replicate = *t["parallelism"]["data_parallel_replicate_degree"].value<int>();
      const int shard = *t["parallelism"]["data_parallel_shard_degree"].value<int>();
      const int local = *t["training"]["local_batch_size"].value<int>();
      CHECK(replicate * shard * *t["parallelism"]["tensor_parallel_degree"].value<int>() *
                *t["parallelism"]["pipeline_parallel_degree"].value<int>() ==
            16);
      CHECK(256 % (local * replicate * shard) == 0);
      CHECK(local * replicate * shard * (256 / (local * replicate * shard)) == 256);
    }
    if (accelerate_problems(in).empty()) {
      ++accepted;
      const YAML::Node y = YAML::Load(emit_text(LauncherFormat::accelerate, in));
      CHECK(y["num_processes"].as<int>() == 16);
      CHECK(y["distributed_type"].as<std::string>() == (d.zero >= 2 ? "FSDP" : "MULTI_GPU"));
    }
  }
  CHECK(accepted >= 20);
}

TEST_CASE(
    "Megatron-LM keep-last: the pruner keeps the newest complete checkpoints, never the one being "
    "written") {
  const std::string script = emit_text(LauncherFormat::megatron, gpt3(1));
  const auto begin = script.find("prune_checkpoints() {");
  const auto end = script.find("\n}\n", begin);
  REQUIRE(begin != std::string::npos);
  const std::string dir = temp_path("ckpt");
  std::string setup = "mkdir -p " + dir;
  for (int it : {100, 200, 300, 400, 500})
    setup += fmt::format(" && mkdir {}/iter_{:07d}", dir, it);
  setup += " && echo 400 > " + dir + "/latest_checkpointed_iteration.txt";  // 500 is being written
  test::write_file(dir + ".sh", script.substr(begin, end + 3 - begin) + "prune_checkpoints\n");
  REQUIRE(std::system(
              (setup + " && CHECKPOINT_DIR=" + dir + " KEEP_LAST=3 bash " + dir + ".sh").c_str()) ==
          0);
  std::string left;
  for (int it : {100, 200, 300, 400, 500}) {
    if (std::system(fmt::format("test -d {}/iter_{:07d}", dir, it).c_str()) == 0) {
      left += std::to_string(it) + " ";
    }
  }
  CHECK(left == "200 300 400 500 ");
}

// Golden files pin the whole text. The step time is pinned too, so that a change to the step-time
// model does not rewrite them; regenerate with SHARDPLAN_UPDATE_GOLDEN=1 build/launch_tests.
TEST_CASE("golden files") {
  auto pinned = [](EmitInputs in) {
    const double step = 26.0;
    in.estimate.time.step_s = in.estimate.step_s = step;
    in.estimate.throughput.tokens_per_s =
        in.training.global_batch * static_cast<double>(in.training.seq_len) / step;
    in.estimate.throughput.mfu = 0.4;
    RunbookOptions o;
    o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
    in.runbook = plan_runbook(in.model, in.training, in.plan, in.cluster, in.estimate, o);
    in.settings =
        long_run_settings(in.runbook, IntervalChoice::default_interval, kDefaultSeed, false);
    return in;
  };
  ParallelPlan p = test::plan(16, 1, 1);
  p.zero = 3;
  p.recompute = Recompute::full;
  const EmitInputs llama = make_inputs(load_model("llama-3.1-8b"), test::training(8192, 256), p,
                                       test::cluster(16, "dgx-h100"));
  const struct {
    LauncherFormat format;
    EmitInputs in;
    const char* file;
  } cases[] = {{LauncherFormat::deepspeed, pinned(gpt3(1)), "deepspeed-gpt3-175b.json.golden"},
               {LauncherFormat::megatron, pinned(gpt3(1)), "megatron-gpt3-175b.sh.golden"},
               {LauncherFormat::torchtitan, pinned(as_titan(gpt3(2))), "torchtitan-gpt3-175b.toml.golden"},
               {LauncherFormat::accelerate, pinned(llama), "accelerate-llama-3.1-8b.yaml.golden"}};
  const bool update = std::getenv("SHARDPLAN_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : cases) {
    CAPTURE(c.file);
    const std::string path = std::string(SHARDPLAN_TEST_DATA) + "/emit/" + c.file;
    // The version and commit change with every commit: the golden holds a placeholder.
    std::string text = emit_text(c.format, c.in);
    const std::string version = shardplan_version();
    for (size_t at; (at = text.find(version)) != std::string::npos;) {
      text.replace(at, version.size(), "<shardplan version>");
    }
    if (update) test::write_file(path, text);
    CHECK(text == test::read_file(path));
  }
}
