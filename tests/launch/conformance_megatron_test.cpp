// Megatron-LM conformance: every emitted pretrain_gpt.py launch over a grid of models (dense,
// GQA, MoE, MLA) and plans passes the rules transcribed from Megatron-LM's own start-up checks
// (megatron_rules.hpp), and the rules catch what the scripts emitted before this round got wrong
// (tests/data/emit/before/: no --lr, no router score function, no dispatcher, no RoPE base, no
// layout for 61 layers on pp 16).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>

#include "megatron_rules.hpp"
#include "shardplan/emit.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

struct GridCase {
  const char* model;
  const char* cluster;
  int gpus, tp, pp, ep, zero, global_batch, interleave;
  Recompute recompute;
  Precision precision;
  double tokens;
};

EmitInputs inputs_of(const GridCase& g) {
  const ModelSpec m = load_model(g.model);
  const ClusterSpec c = test::cluster(g.gpus, g.cluster);
  TrainingSpec t = test::training(m.seq_len, g.global_batch);
  t.tokens = g.tokens;
  t.framework = load_framework(Framework::megatron);
  set_precision(t, g.precision);  // after the framework: fp8 is megatron's default recipe
  ParallelPlan p = test::plan(g.gpus / (g.tp * g.pp), g.tp, g.pp);
  p.ep = g.ep;
  p.zero = g.zero;
  p.recompute = g.recompute;
  p.interleave = g.interleave;
  if (g.interleave > 1) p.schedule = Schedule::interleaved;
  p.sequence_parallel = g.tp > 1;
  RunbookOptions o;
  o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
  EmitInputs in{m, c, t, p, estimate(m, t, p, c), {}, {}, "flags", ""};
  in.runbook = plan_runbook(m, t, p, c, in.estimate, o);
  in.settings =
      long_run_settings(in.runbook, IntervalChoice::default_interval, kDefaultSeed, false);
  return in;
}

constexpr GridCase kGrid[] = {
    {"llama-3.1-8b", "dgx-h100", 8, 1, 1, 1, 1, 256, 1, Recompute::none, Precision::bf16, 0},
    {"llama-3.1-8b", "dgx-h100", 16, 2, 2, 1, 1, 256, 1, Recompute::selective, Precision::bf16,
     1e12},
    {"llama-3.1-70b", "dgx-h100", 64, 8, 2, 1, 1, 512, 1, Recompute::full, Precision::bf16, 0},
    {"llama-3.1-70b", "dgx-h100", 128, 8, 4, 1, 1, 512, 2, Recompute::full, Precision::bf16, 15e12},
    {"gpt3-175b", "dgx-a100", 1024, 8, 8, 1, 1, 1536, 1, Recompute::full, Precision::bf16, 300e9},
    {"mixtral-8x7b", "dgx-h100", 64, 2, 1, 8, 1, 512, 1, Recompute::full, Precision::bf16, 0},
    {"qwen3-30b-a3b", "dgx-h100", 32, 1, 1, 8, 1, 512, 1, Recompute::full, Precision::bf16, 0},
    {"deepseek-v3", "h800-deepseek", 2048, 1, 16, 64, 1, 15360, 1, Recompute::full, Precision::fp8,
     14.8e12},
    {"deepseek-v3", "h800-deepseek", 2048, 1, 16, 64, 1, 15360, 1, Recompute::full, Precision::fp8,
     0},
};

bool failed(const std::vector<std::string>& failures, const std::string& rule) {
  for (const auto& f : failures) {
    if (f.rfind(rule + ":", 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("Megatron-LM conformance: every grid launch passes the launcher's own start-up rules") {
  for (const GridCase& g : kGrid) {
    const EmitInputs in = inputs_of(g);
    const std::string model = g.model;
    CAPTURE(model);
    CAPTURE(g.gpus);
    CAPTURE(g.tokens);
    const auto problems = megatron_problems(in);
    REQUIRE_MESSAGE(problems.empty(), problems.front().message);
    const test::MegatronLaunch launch =
        test::run_megatron_script(emit_text(LauncherFormat::megatron, in));
    const auto failures = test::megatron_failures(launch, in.model);
    CHECK_MESSAGE(failures.empty(), test::joined(failures));
    CHECK(launch.world_size == g.gpus);
  }
}

TEST_CASE("Megatron-LM conformance: the rules fail on the scripts emitted before them") {
  struct Before {
    const char* file;
    const char* model;
    std::vector<std::string> rules;
  };
  const Before cases[] = {
      {"megatron-deepseek-v3.sh",
       "deepseek-v3",
       {"pp-divisible", "lr", "expert-bias", "router", "dispatcher", "norm", "rope-scaling",
        "moe-recipe"}},
      {"megatron-llama-3.1-8b.sh", "llama-3.1-8b", {"lr", "rope-base", "rope-scaling"}},
      {"megatron-qwen3-30b-a3b.sh",
       "qwen3-30b-a3b",
       {"lr", "rope-base", "norm", "dispatcher", "moe-recipe"}},
      {"megatron-mixtral-8x7b.sh", "mixtral-8x7b", {"lr", "rope-base", "dispatcher", "moe-recipe"}},
  };
  for (const Before& b : cases) {
    const std::string file = b.file;
    CAPTURE(file);
    const std::string text =
        test::read_file(std::string(SHARDPLAN_TEST_DATA) + "/emit/before/" + b.file);
    const auto failures =
        test::megatron_failures(test::run_megatron_script(text), load_model(b.model));
    for (const auto& rule : b.rules) {
      CAPTURE(rule);
      CHECK(failed(failures, rule));
    }
  }
}

TEST_CASE(
    "Megatron-LM: DeepSeek-V3 on pp 16 gets a layout with the MTP layer, sigmoid routing "
    "and the report's schedule") {
  const EmitInputs in = inputs_of(kGrid[7]);
  const auto l = test::run_megatron_script(emit_text(LauncherFormat::megatron, in));
  // 61 layers on 16 stages: 3 on the ends, 4 on stages 1-13, 3 on stage 14 (the plan's split).
  CHECK(l.args.at("--pipeline-model-parallel-layout") ==
        "Et*3|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*3|t*3mL");
  CHECK(l.args.at("--moe-router-score-function") == "sigmoid");
  CHECK(l.args.at("--moe-token-dispatcher-type") == "alltoall");
  CHECK(l.args.at("--moe-router-topk-scaling-factor") == "2.5");
  CHECK(l.args.at("--moe-router-num-groups") == "8");
  CHECK(l.args.at("--moe-router-group-topk") == "4");
  CHECK(l.args.at("--moe-router-load-balancing-type") == "seq_aux_loss");
  CHECK(l.args.at("--moe-aux-loss-coeff") == "0.0001");  // report Sec. 4.2, alpha = 0.0001
  CHECK(l.args.at("--norm-epsilon") == "1e-06");
  CHECK(l.args.at("--rope-type") == "yarn");
  CHECK(l.args.at("--rotary-scaling-factor") == "40");
  // DeepSeek-V3 report Sec. 4.2: 2.2e-4 after 2K warm-up steps, down to 2.2e-5.
  CHECK(l.args.at("--lr") == "0.00022");
  CHECK(l.args.at("--min-lr") == "2.2e-05");
  CHECK(l.args.at("--lr-warmup-iters") == "2000");
  CHECK(l.args.at("--lr-decay-style") == "WSD");
  CHECK(l.args.at("--adam-beta2") == "0.95");
  // 14.8T tokens / (15360 x 4096) = 235,239.7: 235,240 steps; decay ends at 14.3/14.8 of them.
  CHECK(l.args.at("--train-iters") == "235240");
  CHECK(l.args.at("--lr-decay-iters") == std::to_string(std::llround(235240 * 14.3 / 14.8)));
}

TEST_CASE("Megatron-LM: Llama 3.1 trains with its RoPE base, scaling and epsilon") {
  const EmitInputs in = inputs_of(kGrid[0]);
  const auto l = test::run_megatron_script(emit_text(LauncherFormat::megatron, in));
  CHECK(l.args.at("--rotary-base") == "500000");
  CHECK(l.args.count("--use-rope-scaling") == 1);
  CHECK(l.args.at("--rope-scaling-factor") == "8");
  CHECK(l.args.at("--norm-epsilon") == "1e-05");
  // Llama 2's recipe for 7B-13B (Touvron et al. 2023 Table 1): 3.0e-4, 2000 warm-up, to 10%.
  CHECK(l.args.at("--lr") == "0.0003");
  CHECK(l.args.at("--min-lr") == "3e-05");
  CHECK(l.args.at("--lr-decay-style") == "cosine");
}

TEST_CASE("Megatron-LM: an unknown run length is checked by the script before it starts") {
  const EmitInputs in = inputs_of(kGrid[0]);  // no --tokens: TRAIN_ITERS at launch
  const std::string script = emit_text(LauncherFormat::megatron, in);
  CHECK(test::contains(script, "[ \"$TRAIN_ITERS\" -gt 2000 ]"));
  const std::string dir = test::make_temp_dir();
  test::write_file(dir + "/m.sh", script);
  test::write_file(dir + "/torchrun", "#!/bin/sh\nexit 0\n");
  const std::string run = "chmod +x " + dir + "/torchrun && PATH=" + dir +
                          ":$PATH NODE_RANK=1 CHECKPOINT_DIR=/c DATA_PATH=/d TOKENIZER_MODEL=t "
                          "TRAIN_ITERS=500 bash " +
                          dir + "/m.sh 2>/dev/null";
  CHECK(WEXITSTATUS(std::system(run.c_str())) == 2);
  // Without the placeholders the script refuses to start.
  const std::string bare =
      "chmod +x " + dir + "/torchrun && PATH=" + dir + ":$PATH bash " + dir + "/m.sh 2>/dev/null";
  CHECK(WEXITSTATUS(std::system(bare.c_str())) != 0);
}

TEST_CASE("Megatron-LM: the GB200 recipe's 92 offloaded layers pass TransformerConfig's checks") {
  // Megatron-Bridge llama31_workload_base_configs.py, GB200 FP8-CS V1: 128 GPUs, TP 2,
  // Megatron-FSDP, GBS 64, cpu_offloading_num_layers 92.
  const ModelSpec m = load_model("llama-3.1-405b");
  const ClusterSpec c = test::cluster(128, "gb200-nvl72");
  TrainingSpec t = test::training(8192, 64);
  t.framework = load_framework(Framework::megatron);
  set_precision(t, Precision::fp8_tensorwise);
  ParallelPlan p = test::plan(64, 2, 1);
  p.zero = 3;
  p.sequence_parallel = true;
  p.offload.activation_layers = 92;
  EmitInputs in{m, c, t, p, estimate(m, t, p, c), {}, {}, "flags", ""};
  RunbookOptions o;
  o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
  in.runbook = plan_runbook(m, t, p, c, in.estimate, o);
  in.settings =
      long_run_settings(in.runbook, IntervalChoice::default_interval, kDefaultSeed, false);
  REQUIRE(megatron_problems(in).empty());
  const std::string script = emit_text(LauncherFormat::megatron, in);
  const test::MegatronLaunch l = test::run_megatron_script(script);
  CHECK(l.args.count("--cpu-offloading") == 1);
  CHECK(l.args.at("--cpu-offloading-num-layers") == "92");
  CHECK_MESSAGE(test::megatron_failures(l, m).empty(), test::joined(test::megatron_failures(l, m)));
  // The rule has teeth: Megatron-Core refuses all 126 layers, and pipeline parallelism.
  auto with = [&](const char* flag, const std::string& value) {
    test::MegatronLaunch c = l;
    c.args.erase(flag);
    c.args.emplace(flag, value);
    return c;
  };
  CHECK(failed(test::megatron_failures(with("--cpu-offloading-num-layers", "126"), m),
               "cpu-offloading"));
  CHECK(failed(test::megatron_failures(with("--pipeline-model-parallel-size", "2"), m),
               "cpu-offloading"));
  // torchtitan, DeepSpeed and accelerate (FSDP) have no such offload: emit refuses it.
  for (LauncherFormat f :
       {LauncherFormat::torchtitan, LauncherFormat::deepspeed, LauncherFormat::accelerate}) {
    const auto problems = launcher_problems(f, in);
    REQUIRE_FALSE(problems.empty());
    bool named = false;
    for (const PlanProblem& q : problems)
      named |= q.field == "--offload-activation-layers" &&
               test::contains(q.message, "activations of whole layers");
    CHECK(named);
  }
}
