// DeepSeek-V3's published layout end to end: estimate, Megatron flags, and expert-parallel input
// refused by name.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::run_cli;

namespace {
using shardplan::test::contains;
// DeepSeek-V3 report (arXiv:2412.19437) Sec. 3.1-3.2 and 4.2: 2,048 H800s, PP 16, EP 64 over 8
// nodes, ZeRO-1, no TP; 4K sequences, batch 15,360 sequences. The report does not give its
// stage split; Megatron-Bridge's deepseek_v3.py sets, for PP 16: the embedding and 4 layers,
// 14 stages of 4, and 1 layer beside the MTP module and the loss.
const std::string kLayout =
    " --model deepseek-v3 --cluster h800-deepseek --gpus 2048 --pp 16 --ep 64 --zero 1"
    " --global-batch 15360 --precision fp8 --recompute full"
    " --first-stage-layers 4 --last-stage-layers 1";
}  // namespace

TEST_CASE("estimate: DeepSeek-V3's published layout runs, EP all-to-alls cross InfiniBand") {
  const auto r = run_cli("estimate" + kLayout + " --tokens 14.8T --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("training").at("seq_len") == 4096);
  const auto& ep = j.at("comm").at("expert_parallel");
  CHECK(ep.at("group").at("ranks") == 64);
  CHECK(ep.at("group").at("nodes") == 8);
  CHECK(contains(ep.at("tier").get<std::string>(), "ib-ndr"));
  // Dispatch + combine of 4,096 tokens x top-8 x hidden 7,168 in 16 bits: each one 470 MB.
  CHECK(ep.at("bytes_per_call") == 4096.0 * 8 * 7168 * 2);
  // Full recompute runs each MoE layer's forward again, its dispatch and combine with it: six
  // all-to-alls per layer and micro-batch, not four.
  CHECK(ep.at("calls_per_step") == 6 * 120 * 4);  // 120 micro-batches, 4 MoE layers a stage
}

TEST_CASE("estimate: DeepSeek-V3's layout with DeepEP is slower than the report, not wildly") {
  // The report: 2.664M H800 GPU-hours of pre-training for 14.8T tokens (180K per trillion).
  // DeepEP's node-deduplicated dispatch in fp8 and the blockwise recipe, with full recompute
  // (README.md's second row): without DualPipe's overlap of the all-to-alls, and paying each
  // MoE layer's all-to-alls again in the recompute, the estimate is slower, not wildly off.
  const auto r = run_cli(
      "estimate --model deepseek-v3 --cluster h800-deepseek --gpus 2048 --pp 16 --ep 64 --zero 1"
      " --global-batch 15360 --precision fp8-blockwise --recompute full --first-stage-layers 4"
      " --last-stage-layers 1 --moe-dispatcher deepep --moe-fp8-dispatch --tokens 14.8T --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double gpu_hours = j.at("training_run").at("gpu_hours").get<double>();
  CHECK(gpu_hours > 2.664e6);
  CHECK(gpu_hours < 2.0 * 2.664e6);
}

TEST_CASE("emit megatron: MLA, shared expert, dense first layers, expert tp") {
  const auto r = run_cli("emit --format megatron" + kLayout + " --expert-tp 1");
  REQUIRE(r.status == 0);
  for (const char* flag :
       {"--multi-latent-attention", "--kv-lora-rank 512", "--q-lora-rank 1536", "--qk-head-dim 128",
        "--qk-pos-emb-head-dim 64", "--v-head-dim 128", "--moe-ffn-hidden-size 2048",
        "--moe-shared-expert-intermediate-size 2048", "--moe-layer-freq '[0,0,0,1,",
        "--ffn-hidden-size 18432", "--expert-model-parallel-size 64",
        "--expert-tensor-parallel-size 1", "--moe-router-enable-expert-bias",
        "--mtp-num-layers 1"}) {
    CAPTURE(flag);
    CHECK(contains(r.out, flag));
  }
}

TEST_CASE("expert tp folds experts over tp x dp; ill-fitting degrees are refused by name") {
  // Qwen3-30B-A3B on 8 GPUs: tp 8 for attention, experts whole on each rank and spread ep 8.
  const auto ok = run_cli(
      "estimate --model qwen3-30b-a3b --gpus 8 --tp 8 --ep 8 --expert-tp 1 --global-batch 8 "
      "--json");
  CHECK(ok.status != 2);
  shardplan::test::check_refused(
      "estimate --model qwen3-30b-a3b --gpus 8 --tp 8 --ep 16 "
      "--expert-tp 1 --global-batch 8",
      "--ep");
  shardplan::test::check_refused(
      "estimate --model qwen3-30b-a3b --gpus 8 --tp 8 --expert-tp 5 --global-batch 8",
      "expert tp 5 must divide");
  shardplan::test::check_refused(
      "estimate --model llama-2-7b --gpus 8 --tp 8 --expert-tp 2 --global-batch 8", "--expert-tp");
  shardplan::test::check_refused(
      "estimate --model qwen3-30b-a3b --gpus 8 --capacity-factor 0.5 --global-batch 8",
      "--capacity-factor");
}

TEST_CASE("plan: a mixture of experts on 256 GPUs stops at the expert-parallel rung and says why") {
  const auto r = run_cli(
      "plan --model qwen3-235b-a22b --cluster dgx-h100 --gpus 256 --global-batch 1024 --top 1");
  REQUIRE(r.status == 0);
  // 235.09B parameters, 22.19B of them a token's: ZeRO-3 would gather 10.6x what is used.
  CHECK(contains(r.out, "ZeRO-3 would gather all 235.09B parameters on every pass, 10.6x the "
                        "22.19B a token uses"));
  CHECK(contains(r.out, "prefer EP over TP for the expert layers"));
  const size_t rung = r.out.find("expert-parallel        STOP HERE");
  REQUIRE(rung != std::string::npos);
  CHECK(contains(r.out.substr(rung, r.out.find('\n', rung) - rung), "experts split"));
  CHECK(contains(r.out, "Recommended (expert-parallel"));
}

TEST_CASE("--recompute-modules: Megatron-Core's own refusals, by the flag's name") {
  const std::string base =
      "estimate --model llama-3.1-8b --gpus 8 --global-batch 64 --framework megatron";
  // Modules are what selective recompute redoes.
  auto r = run_cli(base + " --recompute-modules mlp");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--recompute-modules"));
  CHECK(contains(r.err, "--recompute selective"));
  // mla_up_proj needs multi-latent attention (TransformerConfig.__post_init__).
  r = run_cli(base + " --recompute selective --recompute-modules mla_up_proj");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "multi_latent_attention"));
  // layernorm under FP8 delayed scaling, Megatron's default fp8 recipe.
  r = run_cli(base + " --recompute selective --recompute-modules layernorm --precision fp8");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "delayed scaling"));
  // torchtitan recomputes by its own policy, not by Megatron's module names.
  r = run_cli(
      "estimate --model llama-3.1-8b --gpus 8 --global-batch 64 --framework torchtitan --zero 3 "
      "--recompute selective --recompute-modules mlp");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "does not recompute Megatron-Core's modules"));
  // An unknown module names the valid ones.
  r = run_cli(base + " --recompute selective --recompute-modules attention");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mla_up_proj"));
}

TEST_CASE("--recompute-modules: DeepSeek-V3's RMSNorm and MLA up-projection recompute") {
  // The report (Sec. 3.2.3) recomputes RMSNorm and the MLA up projections: the activations of a
  // layer shrink against core_attn alone, and the recompute costs a little time.
  const std::string layout =
      " --model deepseek-v3 --cluster h800-deepseek --gpus 2048 --pp 16 --ep 64 --zero 1"
      " --global-batch 15360 --precision fp8-blockwise --moe-dispatcher deepep"
      " --first-stage-layers 4 --last-stage-layers 1 --recompute selective --json";
  // With core_attn alone the layout does not fit in 80 GB (exit 1, the estimate printed); with
  // the report's recompute it does.
  const auto base = run_cli("estimate" + layout);
  const auto mods = run_cli("estimate" + layout + " --recompute-modules layernorm,mla_up_proj");
  REQUIRE(base.status == 1);
  REQUIRE(mods.status == 0);
  const auto b = nlohmann::json::parse(base.out);
  const auto m = nlohmann::json::parse(mods.out);
  CHECK(m.at("plan").at("recompute_modules") ==
        nlohmann::json::array({"layernorm", "mla_up_proj"}));
  CHECK(m.at("memory").at("activations_bytes").get<double>() <
        0.9 * b.at("memory").at("activations_bytes").get<double>());
}

TEST_CASE("emit megatron: --recompute-modules as argparse takes it, one word each") {
  const auto e = run_cli(
      "emit --format megatron --model qwen3-30b-a3b --gpus 16 --tp 2 --ep 8 --zero 1 "
      "--recompute selective --recompute-modules moe_act,layernorm --precision fp8-tensorwise "
      "--global-batch 64 --tokens 1T");
  INFO(e.err);
  REQUIRE(e.status == 0);
  CHECK(contains(e.out, "--recompute-granularity selective"));
  CHECK(contains(e.out, "--recompute-modules layernorm moe_act\n"));
}

TEST_CASE("plan: on DeepSeek-V3's cluster the search finds the report's recompute set") {
  // With DeepEP's fp8 dispatch, recomputing RMSNorm and the MLA up projections (report Sec.
  // 3.2.3) beats full recompute, which reruns every MoE layer's all-to-alls.
  const auto r = run_cli(
      "plan --model deepseek-v3 --cluster h800-deepseek --gpus 2048 --global-batch 15360 "
      "--precision fp8-blockwise --moe-dispatcher deepep --moe-fp8-dispatch --top 3 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& plan = j.at("fastest").at("plan");
  CHECK(plan.at("recompute") == "selective");
  const auto modules = plan.at("recompute_modules").dump();
  CHECK(contains(modules, "mla_up_proj"));
  CHECK(plan.at("ep").get<int>() > 1);
}

TEST_CASE("ZeRO-1: a MoE's experts sync over their expert-data-parallel group, not the whole dp") {
  // Mixtral 8x7B on 8 GPUs: with ep 8 every expert lives on one rank (an expert-data group of
  // 1), so only the dense weights are reduced and gathered; with ep 1 all of them are, over the
  // same 8 ranks. Experts: 32 layers x 8 x 3 matrices of 4096 x 14336 (config.json).
  const auto dp_time = [](int ep) {
    const auto r = run_cli("estimate --model mixtral-8x7b --gpus 8 --zero 1 --global-batch 64 "
                           "--recompute full --json --ep " + std::to_string(ep));
    REQUIRE(r.status <= 1);  // ep 1 does not fit in 80 GB; the estimate is printed all the same
    const auto j = nlohmann::json::parse(r.out);
    return std::pair{j.at("comm").at("data_parallel").at("time_s").get<double>(),
                     j.at("memory").at("total_params").get<double>()};
  };
  const auto [all_s, total] = dp_time(1);
  const auto [dense_s, unused] = dp_time(8);
  const double experts = 32.0 * 8 * 3 * 4096 * 14336;
  CHECK(dense_s == doctest::Approx(all_s * (total - experts) / total).epsilon(0.02));
}

TEST_CASE("--recompute-modules moe beside --moe-a2a-overlap is refused, as Megatron-Core does") {
  const auto r = run_cli(
      "estimate --model qwen3-30b-a3b --gpus 16 --tp 2 --ep 8 --zero 1 --global-batch 64 "
      "--moe-a2a-overlap --recompute selective --recompute-modules moe");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--moe-a2a-overlap"));
  CHECK(contains(r.err, "drop moe from --recompute-modules"));
}

TEST_CASE("emit megatron: HSDP at ZeRO-1 as distributed-optimizer instances") {
  // 32 ranks, shard groups of 8: 4 instances, each sharding the optimizer over its 8 ranks.
  const auto e = run_cli(
      "emit --format megatron --model llama-3.1-8b --cluster dgx-h100 --gpus 32 --zero 1 "
      "--dp-shard 8 --recompute full --global-batch 64 --tokens 1T");
  INFO(e.err);
  REQUIRE(e.status == 0);
  CHECK(contains(e.out, "--use-distributed-optimizer\n"));
  CHECK(contains(e.out, "--num-distributed-optimizer-instances 4\n"));
  // ZeRO-3 (Megatron-FSDP) is not run hybrid.
  const auto z3 = run_cli(
      "estimate --model llama-3.1-8b --cluster dgx-h100 --gpus 32 --zero 3 --dp-shard 8 "
      "--global-batch 64 --framework megatron");
  CHECK(z3.status == 2);
  CHECK(contains(z3.err, "--dp-shard"));
}

TEST_CASE("ZeRO-3: the weight all-gather row says the experts gather over their own group") {
  const auto r = run_cli("estimate --model mixtral-8x7b --gpus 8 --zero 3 --ep 8 --global-batch 64 "
                         "--recompute full");
  REQUIRE(r.status <= 1);
  CHECK(contains(r.out, "(ZeRO-3); the experts' over their expert-data-parallel group"));
}

TEST_CASE("a MoE plan says its routing is priced balanced until told otherwise") {
  const std::string args =
      "estimate --model qwen3-30b-a3b --cluster dgx-h100 --gpus 16 --ep 8 --zero 1 "
      "--recompute full --global-batch 128 --json";
  auto notes = [](const std::string& cmd) {
    const auto r = run_cli(cmd);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);  // outlives the loop over its notes
    std::string all;
    for (const auto& n : j.at("notes")) all += n.get<std::string>();
    return all;
  };
  CHECK(contains(notes(args), "MoE routing priced balanced"));
  CHECK(contains(notes(args), "--moe-max-load"));
  for (const char* stated :
       {" --moe-force-balance", " --moe-max-load 1.3", " --capacity-factor 1"})
    CHECK_FALSE(contains(notes(args + stated), "MoE routing priced balanced"));
  CHECK_FALSE(contains(notes("estimate --model llama-3.1-8b --cluster dgx-h100 --gpus 8 --zero 3 "
                             "--json"),
                       "MoE routing"));
  // What the busiest rank costs: 1.3 x the expert GEMMs and all-to-alls every rank waits for.
  const auto step = [](const std::string& cmd) {
    const auto r = run_cli(cmd);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out).at("step").at("step_s").get<double>();
  };
  CHECK(step(args + " --moe-max-load 1.3") > step(args + " --moe-force-balance"));
}
