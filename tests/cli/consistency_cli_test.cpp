// What a user reads agrees with itself: one MFU check on every command (provision included),
// the notes of what was assumed, and no time to train for a run that cannot start.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::contains;
using shardplan::test::run_cli;

TEST_CASE("provision warns on plans above the framework x GPU generation's published MFU") {
  // Megatron-LM on A100 reaches 56.3% at most (Korthikanti et al. 2022 Table 5): a 7B plan on
  // 8 A100s priced above it carries the mark and the warning.
  const auto r = run_cli(
      "provision --model llama-2-7b --tokens 1T --gpu A100-80GB --gpus 8 --global-batch 64");
  REQUIRE(r.status == 0);
  CAPTURE(r.out);
  const auto j = nlohmann::json::parse(
      run_cli("provision --model llama-2-7b --tokens 1T --gpu A100-80GB --gpus 8 "
              "--global-batch 64 --json")
          .out);
  const auto& o = j.at("provision").at("options").at(0);
  REQUIRE(o.at("mfu").get<double>() > 0.563);  // 72% when written
  CHECK(contains(r.out, "% !"));
  CHECK(contains(r.out, "above the highest published for megatron on A100 (56%"));
  CHECK(o.at("mfu_warning").is_string());
}

TEST_CASE("estimate warns against the GPU generation's figure, not the framework's best") {
  // Megatron on H100: 47% (Megatron-LM README, 462B on 6,144 H100s), below its A100 56.3%.
  const auto j = nlohmann::json::parse(
      run_cli("estimate --model llama-2-7b --cluster dgx-h100 --gpus 8 --zero 1 --global-batch 64 "
              "--json")
          .out);
  const double mfu = j.at("throughput").at("mfu");
  bool warned = false;
  for (const auto& n : j.at("notes")) warned = warned || contains(n, "megatron on H100 (47%");
  CHECK(warned == (mfu > 0.47));
  CHECK(mfu > 0.47);  // this plan is one of them
}

TEST_CASE("the notes say what was assumed") {
  const auto r = run_cli("estimate --model qwen2.5-7b --gpu H100-SXM --cluster dgx-a100 --gpus 8");
  CHECK(contains(r.out, "note: sequence length 8192: the model's own context is 32768"));
  CHECK(contains(r.out, "note: ZeRO-0 (plain data parallel): no --zero was given"));
  CHECK(contains(r.out, "note: --gpu H100-SXM replaces dgx-a100's A100-80GB"));
  const auto j = nlohmann::json::parse(
      run_cli("estimate --model llama-2-7b --gpus 8 --zero 1 --global-batch 64 --tokens 1T --json")
          .out);
  // No --gpu-hour-cost: the H100-SXM's list price prices the run, and a note says so.
  CHECK(j.at("training_run").at("cost").get<double>() > 0);
  bool said = false;
  for (const auto& n : j.at("notes")) said = said || contains(n, "list price");
  CHECK(said);
}

TEST_CASE("plan prints the time and cost to train; memory and comm refuse run flags") {
  const auto r = run_cli("plan --model llama-2-7b --gpus 64 --tokens 15T --gpu-hour-cost 2.5");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "Training 15.00T tokens: "));
  CHECK(contains(r.out, "at 2.5 per GPU-hour"));
  check_refused("memory --model llama-2-7b --gpus 8 --tokens 1T", "--tokens");
  check_refused("comm --model llama-2-7b --gpus 8 --gpu-hour-cost 2.5", "--gpu-hour-cost");
}

TEST_CASE("estimate of a plan that does not fit gives no time to train") {
  const auto r = run_cli("estimate --model llama-3.1-8b --gpus 64 --tokens 15T");
  CHECK(r.status == 1);
  CHECK(contains(r.out, "DOES NOT FIT"));
  CHECK_FALSE(contains(r.out, "days ("));
  CHECK(contains(r.out, "not with this plan: it does not fit in device memory"));
}

TEST_CASE("the comm table's shares add up to the step table's exposed communication") {
  const auto j = nlohmann::json::parse(
      run_cli("estimate --model llama-2-7b --cluster dgx-h100 --gpus 8 --zero 3 --global-batch 64 "
              "--framework deepspeed --json")
          .out);
  const double step = j.at("time").at("step_s"), exposed = j.at("time").at("exposed_comm_s");
  double shares = 0;
  for (const auto& [name, t] : j.at("comm").items()) {
    if (!t.is_object() || !t.contains("present") || !t.at("present").get<bool>()) continue;
    CHECK(t.at("exposed_s").get<double>() <= t.at("time_s").get<double>());
    shares += t.at("share_of_step").get<double>();
  }
  CHECK(shares == doctest::Approx(exposed / step));
  CHECK(j.at("throughput").at("mfu").get<double>() > 0.4);  // was 16%: the NVLink group priced
                                                            // with a 384-GPU inter-node fit
}
