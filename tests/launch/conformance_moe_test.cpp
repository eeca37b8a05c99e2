// Mixture-of-experts execution in the emitted launches: the flags Megatron-Core's MoE guide
// (megatron/core/transformer/moe/README.md at NVIDIA/Megatron-LM d98e8a64) sets for performance,
// the router's balancing from the model's config.json, capacity, expert tp, the EP all-to-all
// overlap and FP8 dispatch, each passing the rules transcribed from TransformerConfig.__post_init__
// (megatron_rules.hpp); torchtitan v0.2.2's expert keys. A dense model's launch carries none.
#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <map>
#include <string>
#include <vector>

#include "megatron_rules.hpp"
#include "shardplan/emit.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

struct MoeCase {
  const char* model;
  const char* cluster;
  int gpus, tp, pp, ep, etp, global_batch;
  Recompute recompute;
  Framework framework = Framework::megatron;
  bool overlap = false;
  bool fp8_dispatch = false;
  double capacity = 0;
  Schedule schedule = Schedule::one_f_one_b;
  int interleave = 1;
};

EmitInputs inputs_of(const MoeCase& g) {
  const ModelSpec m = load_model(g.model);
  const ClusterSpec c = test::cluster(g.gpus, g.cluster);
  TrainingSpec t = test::training(m.seq_len, g.global_batch);
  t.framework = load_framework(g.framework);
  t.moe_fp8_dispatch = g.fp8_dispatch;
  t.moe_capacity_factor = g.capacity;
  ParallelPlan p = test::plan(g.gpus / (g.tp * g.pp), g.tp, g.pp);
  p.ep = g.ep;
  p.etp = g.etp;
  p.zero = g.framework == Framework::megatron ? 1 : 2;
  p.recompute = g.recompute;
  p.sequence_parallel = g.tp > 1;
  p.moe_a2a_overlap = g.overlap;
  p.schedule = g.schedule;
  p.interleave = g.interleave;
  RunbookOptions o;
  o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
  EmitInputs in{m, c, t, p, estimate(m, t, p, c), {}, {}, "flags", ""};
  in.runbook = plan_runbook(m, t, p, c, in.estimate, o);
  in.settings =
      long_run_settings(in.runbook, IntervalChoice::default_interval, kDefaultSeed, false);
  return in;
}

// The launch pretrain_gpt.py receives, after checking the emitter accepts the plan and the
// launch passes every rule.
test::MegatronLaunch passing_launch(const EmitInputs& in) {
  const auto problems = megatron_problems(in);
  REQUIRE_MESSAGE(problems.empty(), problems.front().message);
  const test::MegatronLaunch l = test::run_megatron_script(emit_text(LauncherFormat::megatron, in));
  const auto failures = test::megatron_failures(l, in.model);
  CHECK_MESSAGE(failures.empty(), test::joined(failures));
  return l;
}

bool refused(const std::vector<PlanProblem>& problems, const std::string& field) {
  for (const PlanProblem& p : problems)
    if (p.field == field) return true;
  return false;
}

const MoeCase kDeepSeek = {"deepseek-v3", "h800-deepseek", 2048, 1, 16, 64, 0, 15360,
                           Recompute::full};
const MoeCase kQwen = {"qwen3-235b-a22b", "dgx-h100", 256, 4, 1, 8, 1, 1024, Recompute::selective};

}  // namespace

TEST_CASE("Megatron-LM: DeepSeek-V3 carries the MoE guide's kernels, its shared-expert overlap "
          "and node-limited routing") {
  const auto l = passing_launch(inputs_of(kDeepSeek));
  CHECK(l.args.count("--moe-grouped-gemm") == 1);
  CHECK(l.args.count("--moe-permute-fusion") == 1);
  CHECK(l.args.count("--moe-shared-expert-overlap") == 1);  // n_shared_experts 1
  CHECK(l.args.at("--moe-token-dispatcher-type") == "alltoall");
  // config.json n_group 8, topk_group 4: tokens to experts of at most 4 of 8 groups.
  CHECK(l.args.at("--moe-router-num-groups") == "8");
  CHECK(l.args.at("--moe-router-group-topk") == "4");
  CHECK(l.args.at("--moe-router-load-balancing-type") == "seq_aux_loss");
  CHECK(l.args.at("--moe-aux-loss-coeff") == "0.0001");
  CHECK(l.args.count("--overlap-moe-expert-parallel-comm") == 0);  // the plan exposes them
  CHECK(l.args.count("--expert-tensor-parallel-size") == 0);
}

TEST_CASE("Megatron-LM: Qwen3-235B-A22B with expert tp 1, capacity and the EP all-to-all "
          "overlap") {
  const auto plain = passing_launch(inputs_of(kQwen));
  CHECK(plain.args.at("--moe-router-load-balancing-type") == "aux_loss");
  CHECK(plain.args.at("--moe-aux-loss-coeff") == "0.001");  // router_aux_loss_coef
  CHECK(plain.args.at("--expert-tensor-parallel-size") == "1");
  CHECK(plain.args.count("--moe-shared-expert-overlap") == 0);  // no shared expert
  CHECK(plain.args.count("--moe-expert-capacity-factor") == 0);  // dropless

  MoeCase capped = kQwen;
  capped.capacity = 1.25;
  const auto c = passing_launch(inputs_of(capped));
  CHECK(c.args.at("--moe-expert-capacity-factor") == "1.25");
  CHECK(c.args.at("--moe-token-drop-policy") == "probs");
  CHECK(c.args.count("--moe-pad-expert-input-to-capacity") == 1);

  MoeCase overlapped = kQwen;
  overlapped.overlap = true;
  const auto o = passing_launch(inputs_of(overlapped));
  CHECK(o.args.count("--overlap-moe-expert-parallel-comm") == 1);
  CHECK(o.args.count("--delay-wgrad-compute") == 1);  // the guide's pairing
  // Under full recompute Megatron-Core refuses the overlap: so does emit, naming the flag.
  overlapped.recompute = Recompute::full;
  CHECK(refused(megatron_problems(inputs_of(overlapped)), "--recompute"));
  MoeCase no_ep = overlapped;
  no_ep.recompute = Recompute::selective;
  no_ep.ep = 1;
  no_ep.etp = 0;
  CHECK(refused(megatron_problems(inputs_of(no_ep)), "--ep"));
}

TEST_CASE("Megatron-LM FP8 dispatch: MXFP8 over the ncclep flex dispatcher on Blackwell only") {
  MoeCase b200 = kQwen;
  b200.cluster = "dgx-b200";
  b200.fp8_dispatch = true;
  const auto l = passing_launch(inputs_of(b200));
  CHECK(l.args.at("--moe-token-dispatcher-type") == "flex");
  CHECK(l.args.at("--moe-flex-dispatcher-backend") == "ncclep");
  CHECK(l.args.at("--moe-dispatch-fwd-dtype") == "mxfp8");
  CHECK(l.args.count("--use-transformer-engine-op-fuser") == 1);
  MoeCase h800 = kDeepSeek;
  h800.fp8_dispatch = true;
  CHECK(refused(megatron_problems(inputs_of(h800)), "--moe-fp8-dispatch"));
}

TEST_CASE("Megatron-LM: a dense model's launch carries no MoE flag") {
  const MoeCase dense = {"llama-3.1-8b", "dgx-h100", 16, 2, 1, 1, 0, 256, Recompute::selective};
  const auto l = passing_launch(inputs_of(dense));
  for (const auto& arg : l.args) {
    const std::string flag = arg.first;  // CAPTURE cannot name a structured binding (clang 14)
    CAPTURE(flag);
    CHECK(flag.find("moe") == std::string::npos);
    CHECK(flag.find("expert") == std::string::npos);
  }
}

TEST_CASE("Megatron-LM MoE rules fail on launches broken their way") {
  MoeCase overlapped = kQwen;
  overlapped.overlap = true;
  const test::MegatronLaunch good = passing_launch(inputs_of(overlapped));
  const ModelSpec qwen = load_model("qwen3-235b-a22b");
  struct Broken {
    const char* rule;
    std::map<std::string, std::string> set;
    std::vector<std::string> drop;
  };
  const Broken cases[] = {
      {"moe-overlap", {{"--recompute-granularity", "full"}}, {}},
      {"moe-overlap", {{"--moe-shared-expert-overlap", ""}}, {}},
      {"moe-overlap", {{"--moe-token-dispatcher-type", "allgather"}}, {}},
      {"moe-overlap", {}, {"--overlap-moe-expert-parallel-comm"}},  // delay-wgrad alone
      {"moe-overlap", {{"--pipeline-model-parallel-size", "2"}}, {}},
      {"moe-dispatch", {{"--moe-enable-deepep", ""}}, {}},
      {"moe-dispatch", {{"--moe-dispatch-fwd-dtype", "mxfp8"}}, {}},
      {"moe-dispatch",
       {{"--moe-token-dispatcher-type", "flex"}, {"--moe-expert-capacity-factor", "1"},
        {"--moe-pad-expert-input-to-capacity", ""}},
       {}},
      {"moe-capacity",
       {{"--moe-expert-capacity-factor", "1"}, {"--moe-router-load-balancing-type", "sinkhorn"}},
       {}},
      {"moe-capacity", {{"--moe-token-drop-policy", "random"}}, {}},
      {"moe-recipe", {}, {"--moe-permute-fusion"}},
      {"moe-recipe", {{"--moe-aux-loss-coeff", "0.01"}}, {}},
  };
  for (const Broken& b : cases) {
    const std::string rule = b.rule;
    CAPTURE(rule);
    test::MegatronLaunch l = good;
    for (const auto& [flag, value] : b.set) l.args[flag] = value;
    for (const auto& flag : b.drop) l.args.erase(flag);
    bool named = false;
    for (const auto& f : test::megatron_failures(l, qwen)) named |= f.rfind(rule + ":", 0) == 0;
    CHECK(named);
  }
}

TEST_CASE("torchtitan v0.2.2: expert tp is written (its default is 1), the DualPipeV overlap as "
          "priced, FP8 dispatch refused") {
  MoeCase titan = {"qwen3-30b-a3b", "dgx-h100", 32, 2, 1, 8, 0, 512, Recompute::full,
                   Framework::torchtitan};
  const EmitInputs in = inputs_of(titan);
  const auto problems = torchtitan_problems(in);
  REQUIRE_MESSAGE(problems.empty(), problems.front().message);
  const std::string text = emit_text(LauncherFormat::torchtitan, in);
  const toml::table t = toml::parse(text);
  CHECK(t["parallelism"]["expert_parallel_degree"].value_or(0) == 8);
  // Qwen3 trains with router_aux_loss_coef 0.001; torchtitan's MoE balances by expert bias only.
  CHECK(test::contains(text, "an auxiliary loss of weight 0.001"));
  CHECK(t["parallelism"]["expert_tensor_parallel_degree"].value_or(0) == 2);  // = tp
  titan.etp = 4;  // ParallelDims._validate: "Currently we only support ETP=TP or ETP=1"
  CHECK(refused(torchtitan_problems(inputs_of(titan)), "--expert-tp"));
  titan.etp = 0;
  titan.fp8_dispatch = true;
  CHECK(refused(torchtitan_problems(inputs_of(titan)), "--moe-fp8-dispatch"));
  titan.fp8_dispatch = false;
  titan.overlap = true;  // no DualPipeV schedule
  CHECK(refused(torchtitan_problems(inputs_of(titan)), "--schedule"));
  const MoeCase dense = {"llama-3.1-8b", "dgx-h100", 16, 1, 1, 1, 0, 256, Recompute::full,
                         Framework::torchtitan};
  const toml::table d = toml::parse(emit_text(LauncherFormat::torchtitan, inputs_of(dense)));
  CHECK_FALSE(d["parallelism"]["expert_tensor_parallel_degree"]);
}

TEST_CASE("torchtitan v0.2.2 DualPipeV: the expert-parallel overlap switch says what was priced") {
  // job_config.py pipeline_parallel_expert_parallel_overlap defaults to true under DualPipeV with
  // pp > 1 and ep > 1: a plan priced with exposed all-to-alls must turn it off.
  MoeCase v = {"qwen3-30b-a3b", "dgx-h100", 32, 1, 2, 8, 0, 512, Recompute::none,
               Framework::torchtitan};
  v.schedule = Schedule::dualpipe_v;
  v.interleave = 2;
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    v.overlap = overlap;
    const EmitInputs in = inputs_of(v);
    const auto problems = torchtitan_problems(in);
    REQUIRE_MESSAGE(problems.empty(), problems.front().message);
    const toml::table t = toml::parse(emit_text(LauncherFormat::torchtitan, in));
    CHECK(t["parallelism"]["pipeline_parallel_schedule"].value_or("") == std::string("DualPipeV"));
    CHECK(t["parallelism"]["pipeline_parallel_expert_parallel_overlap"].value_or(!overlap) ==
          overlap);
  }
  v.recompute = Recompute::full;  // "Does not support activation_checkpoint, set mode=none"
  CHECK(refused(torchtitan_problems(inputs_of(v)), "--schedule"));
}

TEST_CASE("Megatron-LM: gpt-oss and Nemotron-4 train the models their config.json describe") {
  // gpt-oss-120b (config.json: sliding_window 128 on alternate layers, attention sinks,
  // swiglu_limit 7.0, a router Linear with a bias): Megatron-LM's gpt-oss example writes the
  // window, the learnable softmax and the clamped quick-GeGLU with its +1 offset.
  const MoeCase oss = {"gpt-oss-120b", "dgx-h100", 64, 1, 1, 8, 0, 256, Recompute::selective};
  const auto l = passing_launch(inputs_of(oss));
  CHECK(l.args.at("--window-size") == "128,0");
  CHECK(l.args.at("--window-attn-skip-freq") == "2");
  CHECK(l.args.at("--softmax-type") == "learnable");
  CHECK(l.args.count("--quick-geglu") == 1);
  CHECK(l.args.at("--glu-linear-offset") == "1.0");
  CHECK(std::stod(l.args.at("--activation-func-clamp-value")) == 7.0);
  CHECK(l.args.count("--swiglu") == 0);
  // Its router bias is the Linear's own, not DeepSeek-V3's score-correction bias.
  CHECK(l.args.count("--moe-router-enable-expert-bias") == 0);
  // Nemotron-4 340B (NemotronConfig: partial_rotary_factor 0.5, LayerNorm1P).
  const MoeCase nemotron = {"nemotron-4-340b", "dgx-h100", 1536, 8, 12, 1, 0, 768,
                            Recompute::selective};
  const auto n = passing_launch(inputs_of(nemotron));
  CHECK(std::stod(n.args.at("--rotary-percent")) == 0.5);
  CHECK(n.args.count("--apply-layernorm-1p") == 1);
  CHECK(n.args.at("--normalization") == "LayerNorm");
  // Mistral 7B (arXiv:2310.06825 Table 1 window_size 4096; config.json sliding_window 4096):
  // every layer windowed, so a window and no full-attention layers between.
  const MoeCase mistral = {"mistral-7b", "dgx-h100", 8, 1, 1, 1, 0, 64, Recompute::selective};
  const auto w = passing_launch(inputs_of(mistral));
  CHECK(w.args.at("--window-size") == "4096,0");
  CHECK(w.args.count("--window-attn-skip-freq") == 0);
}
