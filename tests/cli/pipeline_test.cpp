// Schedules, stage layouts and the step timeline from the command line: the Llama 3 405B run as
// published, what each launcher gets, bad layouts refused, and --trace written whole.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::make_temp_dir;
using shardplan::test::read_file;
using shardplan::test::run_cli;

namespace {

// Dubey et al. 2024 Table 4: 16,384 H100, TP 8, PP 16, DP 128, 2,048 sequences of 8,192;
// Sec. 3.3.2: interleaved, first and last stage one layer lighter, no activation checkpointing.
const std::string kLlama3Layout =
    "--model llama-3.1-405b --cluster dgx-h100 --gpus 16384 --tp 8 --pp 16 --interleave 2 "
    "--first-stage-layers 3 --last-stage-layers 3 --global-batch 2048 --seq-len 8192 "
    "--sequence-parallel";
// Meta's stack shards weights, gradients and optimizer state under pipelines (FSDP with PP),
// which torchtitan runs and Megatron-LM does not.
// Selective recompute: under torchtitan's FSDP with PP the unsharded fp32 gradients are held
// across micro-batches (pipelining defers their sync), and 128 layer-micro-batches of full
// activations beside them overflow 80 GB.
const std::string kLlama3 = kLlama3Layout + " --framework torchtitan --recompute selective";

using shardplan::test::contains;

}  // namespace

TEST_CASE("estimate runs Llama 3 405B's published layout") {
  const auto r = run_cli("estimate " + kLlama3 + " --zero 2 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("plan").at("schedule") == "interleaved");
  CHECK(j.at("plan").at("first_stage_layers") == 3);
  CHECK(j.at("time").at("micro_batches") == 16);
  // The paper reports 400 TFLOP/s per GPU (41% MFU) on this run. Meta's stack is not
  // torchtitan (whose published tables run it at about 0.8 of Megatron-LM's kernels on H100,
  // profiles/fit): priced with Megatron-LM's fused kernels (ZeRO-1, which Megatron runs under
  // pipelines), the model lands within 15%. Unsharded weights and gradients leave that plan
  // 0.34 GiB over an 80 GB card (exit 1, the estimate still printed): Meta shards them.
  const auto m = run_cli("estimate " + kLlama3Layout + " --framework megatron --zero 1 --json");
  REQUIRE((m.status == 0 || m.status == 1));
  const double tflops =
      nlohmann::json::parse(m.out).at("throughput").at("tflops_per_gpu").get<double>();
  CHECK(tflops > 400 * 0.85);
  CHECK(tflops < 400 * 1.15);
}

TEST_CASE("a layout that does not split, and schedules that cannot run, exit 2") {
  const std::string base =
      "estimate --layers 126 --hidden 16384 --heads 128 --gpus 128 --tp 8 --pp 16 "
      "--interleave 2";
  const std::string even = base + " --global-batch 16";
  const std::string llama = even + " --first-stage-layers 3 --last-stage-layers 3";
  check_refused(even, "--interleave");
  check_refused(even + " --first-stage-layers 2 --last-stage-layers 3", "--first-stage-layers");
  check_refused(base + " --first-stage-layers 3 --last-stage-layers 3 --global-batch 8",
                "at least 16 micro-batches");
  check_refused(llama + " --schedule 1f1b", "--schedule");
  check_refused(llama + " --schedule gpipe", "--interleave");
  check_refused("estimate --model gpt3-1.3b --gpus 8 --schedule zb-v", "--schedule");
  check_refused("estimate --model gpt3-1.3b --gpus 8 --pp 4 --schedule zb-w", "--schedule");
}

TEST_CASE("interleaving runs with micro-batches that are not a multiple of pp") {
  // Megatron-Core groups micro-batches per virtual stage (microbatch_group_size_per_vp_stage,
  // default pp) and needs at least one group, not a multiple of pp.
  const auto r = run_cli(
      "estimate --model gpt3-175b --cluster dgx-h100 --gpus 64 --tp 8 --pp 8 --interleave 2 "
      "--global-batch 20 --recompute full --json");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out).at("time").at("micro_batches") == 20);
  const auto mega = run_cli(
      "emit --format megatron --model gpt3-175b --cluster dgx-h100 --gpus 64 --tp 8 --pp 8 "
      "--interleave 2 --global-batch 20 --recompute full --zero 1");
  REQUIRE(mega.status == 0);
  CHECK(contains(mega.out, "--microbatch-group-size-per-virtual-pipeline-stage 10"));
}

TEST_CASE("zb-v and dualpipe-v take two chunks per device on their own") {
  const auto r = run_cli(
      "estimate --model gpt3-175b --cluster dgx-h100 --gpus 64 --tp 8 --pp 8 --global-batch 32 "
      "--recompute full --schedule zb-v --framework torchtitan --zero 2 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("plan").at("interleave") == 2);
  CHECK(j.at("plan").at("schedule") == "zb-v");
}

TEST_CASE("emit writes the layout in each launcher's keys and refuses schedules it lacks") {
  const auto mega =
      run_cli("emit --format megatron " + kLlama3Layout + " --zero 1 --fragmentation 0.04");
  REQUIRE(mega.status == 0);
  CHECK(contains(mega.out, "--account-for-embedding-in-pipeline-split"));
  CHECK(contains(mega.out, "--account-for-loss-in-pipeline-split"));
  CHECK(contains(mega.out, "--num-virtual-stages-per-pipeline-rank 2"));
  const auto titan = run_cli("emit --format torchtitan " + kLlama3 + " --zero 2");
  REQUIRE(titan.status == 0);
  CHECK(contains(titan.out, "pipeline_parallel_schedule = 'Interleaved1F1B'"));
  CHECK(contains(titan.out, "pipeline_parallel_layers_per_stage = 4"));
  CHECK(contains(titan.out, "pipeline_parallel_first_stage_less_layers = 1"));
  CHECK(contains(titan.out, "pipeline_parallel_last_stage_less_layers = 1"));
  // An uneven layout Megatron's per-rank counts cannot express goes into a layout string.
  const auto layout = run_cli(
      "emit --format megatron --model gpt3-175b --cluster dgx-h100 --gpus 64 --tp 8 --pp 4 "
      "--interleave 2 --first-stage-layers 5 --last-stage-layers 7 --global-batch 8 "
      "--recompute full --zero 1");
  REQUIRE(layout.status == 0);
  CHECK(contains(layout.out,
                 "--pipeline-model-parallel-layout 'Et*5|t*14|t*14|t*14|t*14|t*14|"
                 "t*14|t*7L'"));
  const std::string zbv =
      " --model gpt3-175b --cluster dgx-h100 --gpus 64 --tp 8 --pp 8 --global-batch 32 "
      "--recompute full --schedule zb-v";
  check_refused("emit --format megatron" + zbv + " --zero 1", "--schedule");
  check_refused("emit --format deepspeed" + zbv + " --zero 1 --framework deepspeed", "--schedule");
  const auto zbv_titan =
      run_cli("emit --format torchtitan" + zbv + " --zero 2 --framework torchtitan");
  REQUIRE(zbv_titan.status == 0);
  CHECK(contains(zbv_titan.out, "pipeline_parallel_schedule = 'ZBVZeroBubble'"));
}

TEST_CASE("--trace writes the simulated step as Chrome Trace Event JSON spanning it") {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/step.json";
  const auto r = run_cli(
      "estimate --model gpt3-175b --cluster dgx-h100 --gpus 512 --tp 8 --pp 8 --interleave 2 "
      "--global-batch 128 --sequence-parallel --zero 1 --json --trace " +
      path);
  REQUIRE(r.status == 0);
  const auto est = nlohmann::json::parse(r.out);
  const auto trace = nlohmann::json::parse(read_file(path));
  REQUIRE(trace.at("traceEvents").size() > 100);
  double end_us = 0;
  for (const auto& ev : trace.at("traceEvents")) {
    if (ev.at("ph") == "X")
      end_us = std::max(end_us, ev.at("ts").get<double>() + ev.at("dur").get<double>());
  }
  // The trace is the simulation's event list: it ends where the simulated step does.
  CHECK(end_us / 1e6 ==
        doctest::Approx(est.at("simulated").at("step_s").get<double>()).epsilon(1e-6));
  check_refused("estimate --model gpt3-1.3b --gpus 8 --trace /nonexistent-dir/x.json", "--trace");
}

TEST_CASE("plan shows what a zero-bubble schedule buys, and the memory it costs") {
  const auto r = run_cli(
      "plan --model llama-3.1-405b --cluster dgx-h100 --gpus 1024 --global-batch 512 "
      "--seq-len 8192 --threads 2 --top 3 --framework torchtitan --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const std::string schedule = j.at("fastest").at("plan").at("schedule");
  CHECK((schedule == "zb-v" || schedule == "zb-h1" || schedule == "dualpipe-v"));
  const auto& plain = j.at("fastest_plain_1f1b");
  REQUIRE(plain.is_object());
  CHECK(plain.at("time").at("step_s").get<double>() >
        j.at("fastest").at("time").at("step_s").get<double>());
}
