// DeepSeek-V3's published layout end to end: estimate, Megatron flags, and expert-parallel input
// refused by name.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::run_cli;

namespace {
bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
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
  // The report: 2.664M H800 GPU-hours of pre-training for 14.8T tokens (180K per trillion).
  // Without DualPipe's overlap of the all-to-alls the estimate is slower, not wildly off.
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
