// The traps a new user still met (each reproduced on the main before these tests): a bare
// bandwidth taken as bytes per second, a warm-up longer than the run shortened in silence, heads
// assumed unsaid, a batch that does not split read as "one micro-batch already", MXFP8 refused
// on MI355X for a reason that was not true, V100's 16-bit peak shown as 0, a partial NVL72 rack
// passed silently, no version or commit on what the tool writes, and messages that misled.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::run_cli;

TEST_CASE("a bandwidth without a unit is refused, naming the units, not priced as bytes/s") {
  // Was: "--link 5" priced 5 B/s and a 54,594-day step.
  for (const char* flag : {"--link 5", "--inter 100", "--intra 900"}) {
    CAPTURE(flag);
    const auto r = run_cli(std::string("plan --model llama-2-7b --gpus 16 ") + flag);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "has no unit; a bandwidth needs one"));
    CHECK(contains(r.err, "GB/s (bytes)"));
    CHECK(r.out.empty());
  }
  CHECK(run_cli("plan --model llama-2-7b --gpus 16 --link 5GB/s").status == 0);
}

TEST_CASE("a --warmup-steps longer than the run is refused, not shortened in silence") {
  // Was: --lr-warmup-iters 23841 in the script while its header said 300000.
  const auto r = run_cli(
      "emit --model llama-2-7b --gpus 8 --warmup-steps 300000 --tokens 1T "
      "--format megatron");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--warmup-steps"));
  CHECK(contains(r.err, "300000 warm-up steps do not fit a run of 238419 steps"));
  CHECK(r.out.empty());
  // One that fits is written as given.
  const auto ok = run_cli(
      "emit --model llama-2-7b --gpus 8 --warmup-steps 2000 --tokens 1T "
      "--format megatron");
  REQUIRE(ok.status == 0);
  CHECK(contains(ok.out, "--lr-warmup-iters 2000"));
}

TEST_CASE("a model from --layers/--hidden says what it assumed: heads, MLP, vocabulary") {
  const auto r = run_cli("memory --layers 32 --hidden 4096 --gpus 1 --zero 0");
  CHECK(contains(r.out, "32 attention heads of 128 (hidden / 128; --heads)"));
  CHECK(contains(r.out, "vocabulary 51200 (--vocab)"));
  const auto given = run_cli(
      "memory --layers 32 --hidden 4096 --heads 16 --ffn-hidden 11008 "
      "--vocab 32000 --gpus 1 --zero 0");
  CHECK(contains(given.out, "no grouped-query attention") == false);
  CHECK_FALSE(contains(given.out, "attention heads of 128"));
}

TEST_CASE("a global batch that does not split over the GPUs is said so by the ladder") {
  // 24 sequences on 16 GPUs: 1.5 each. Was: "one micro-batch already".
  const auto r = run_cli("plan --model llama-2-7b --gpus 16 --global-batch 24");
  CHECK(contains(r.out, "does not split evenly over the 16 GPUs (1.5 sequences each)"));
  CHECK_FALSE(contains(r.out, "is one micro-batch already"));
}

TEST_CASE("MXFP8 on MI355X: refused for the true reason (no stack runs it on ROCm)") {
  const auto r = run_cli(
      "estimate --model llama-3.1-8b --cluster dgx-h100 --gpu MI355X "
      "--gpus 8 --precision mxfp8");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mxfp8 does not run on MI355X (CDNA 4)"));
  CHECK(contains(r.err, "matrix cores run MXFP8"));
  CHECK_FALSE(contains(r.err, "mxfp8 needs Blackwell"));
  // On H100 the generation is what is missing.
  const auto h100 = run_cli(
      "estimate --model llama-3.1-8b --cluster dgx-h100 --gpus 8 "
      "--precision mxfp8");
  CHECK(contains(h100.err, "mxfp8 needs Blackwell"));
}

TEST_CASE("list gpus shows V100's 16-bit peak as fp16, not 0") {
  const auto r = run_cli("list gpus");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "16-bit dense"));
  CHECK(contains(r.out, "125 TFLOP/s fp16"));  // NVIDIA V100 datasheet: 125 TFLOPS tensor
  CHECK(contains(r.out, "989 TFLOP/s bf16"));  // H100 SXM: 989.4 dense
}

TEST_CASE("an NVL72 cluster says its racks, and a partial one is named") {
  const auto r = run_cli("estimate --model llama-3.1-8b --cluster gb200-nvl72 --gpus 100");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "2 NVLink domain(s) of 72 GPUs (1 full, one of 28)"));
  CHECK(contains(r.out, "100 GPUs fill 1 NVLink domain(s) of 72 and 28 GPUs of another"));
  const auto whole = run_cli("estimate --model llama-3.1-8b --cluster gb200-nvl72 --gpus 144");
  CHECK(contains(whole.out, "2 NVLink domain(s) of 72 GPUs"));
  CHECK_FALSE(contains(whole.out, "of another"));
}

TEST_CASE("--version, JSON and launcher configs carry the version and commit") {
  const auto v = run_cli("--version");
  REQUIRE(v.status == 0);
  CHECK(contains(v.out, "shardplan 0.1.0 ("));
  CHECK((contains(v.out, "(git ") || contains(v.out, "commit unknown")));
  const std::string version = v.out.substr(10, v.out.find('\n') - 10);  // after "shardplan "
  const auto j = nlohmann::json::parse(run_cli("memory --model llama-2-7b --gpus 8 --json").out);
  CHECK(j.at("shardplan_version") == version);
  const auto cfg = run_cli("emit --model llama-2-7b --gpus 8 --format deepspeed");
  CHECK(contains(cfg.out, "written by shardplan " + version));
}

TEST_CASE("messages that misled now say what is wrong") {
  // A whole number that is absurd is called absurd, not "not a whole number".
  const std::string big = "/tmp/shardplan-traps-big-config.json";
  std::ofstream(big) << R"({"model_type": "llama", "num_hidden_layers": 1000000000000,
    "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008,
    "vocab_size": 32000})";
  const auto r = run_cli("memory --model " + big + " --gpus 8");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "num_hidden_layers: 1000000000000 is far beyond any model's"));
  CHECK_FALSE(contains(r.err, "expected a whole number"));
  std::remove(big.c_str());
  // A folder given to --from: what --from takes.
  const auto dir = run_cli("plan --from /tmp --gpus 8");
  CHECK(dir.status == 2);
  CHECK(contains(dir.err, "is a directory; give a file (a launcher config: .sh, .json, .toml"));
}

TEST_CASE("provision names the GPU types its default grid leaves out for lack of a list price") {
  // Was: "16 GPU types" planned as 9 with B300, GB300, H800, MI325X, MI355X and V100 dropped
  // without a word.
  const auto r = run_cli("provision --model llama-2-7b --tokens 100B --gpus 8");
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "left out of the grid, no public list price in their profiles:"));
  for (const char* gpu : {"B300", "GB300", "H800", "MI325X", "MI355X", "V100"}) {
    CAPTURE(gpu);
    CHECK(contains(r.err, gpu));
  }
  CHECK(contains(r.err, "--gpu-hour-cost NAME=USD"));
}

TEST_CASE("on one GPU the plan names ZeRO-1 with offload, not ZeRO-3 at the same speed") {
  // dp 1: the stages shard nothing, and their times differed only in the last bits of a sum
  // (311.72121027210846 s against ...784 s), which used to rank ZeRO-3 first.
  const auto r = run_cli("plan --model llama-2-7b --gpus 1");
  CHECK(contains(r.out,
                 "Recommended (offload, the simplest rung that works): dp 1 x tp 1 x pp 1, "
                 "ZeRO-1, micro-batch 2, recompute none, offload optimizer to cpu"));
  CHECK(contains(r.out, "Fastest found: dp 1 x tp 1 x pp 1, ZeRO-1, micro-batch 2"));
}

TEST_CASE("a --from file's ZeRO stage is not followed by 'ZeRO-0: no --zero was given'") {
  const auto r = run_cli("estimate --from " + std::string(SHARDPLAN_TEST_DATA) +
                         "/launch/deepspeed-zero3-offload.json --model llama-2-7b");
  CHECK(contains(r.out, "ZeRO-3"));
  CHECK_FALSE(contains(r.out, "no --zero was given"));
}
