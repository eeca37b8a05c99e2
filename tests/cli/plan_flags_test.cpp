// One list of plan flags: `runbook` and `emit` plan the user's plan whenever any flag that
// describes one is given (schedule, offload and layouts included), as `estimate` does, and say
// which plan they use.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::contains;
using shardplan::test::run_cli;

namespace {

const std::string kLlama = "--model llama-2-7b --gpus 8 --global-batch 64";

}  // namespace

TEST_CASE("runbook and emit honour --schedule alone: gpipe without a pipeline is refused") {
  // `estimate` refuses this plan (GPipe needs pp > 1); runbook and emit used to drop the flag and
  // plan the recommended 1F1B run instead.
  for (const char* command : {"runbook", "emit", "estimate"}) {
    CAPTURE(command);
    check_refused(std::string(command) + " " + kLlama + " --schedule gpipe", "--schedule");
    check_refused(std::string(command) + " " + kLlama + " --schedule gpipe", "needs --pp > 1");
  }
}

TEST_CASE("runbook and emit honour --offload alone: Megatron offloads only a sharded optimizer") {
  // Megatron-LM's optimizer CPU offload needs the distributed optimizer (ZeRO-1 or more); the
  // plan the flags give is ZeRO-0, so it is refused, as estimate refuses it.
  for (const char* command : {"runbook", "emit", "estimate"}) {
    CAPTURE(command);
    check_refused(std::string(command) + " " + kLlama + " --offload optimizer",
                  "--offload: optimizer offload needs ZeRO stage 1");
  }
  // FSDP offloads parameters and optimizer together, and only when sharded (ZeRO-2 or more).
  check_refused("emit " + kLlama + " --framework fsdp --offload optimizer,params",
                "needs ZeRO stage 2");
}

TEST_CASE("runbook with only --schedule 1f1b plans the flags' plan, not the recommended one") {
  // The flags' plan: dp 8, ZeRO-0, micro-batch 1. Unsharded, 7B x 16 B/param (bf16 weights and
  // gradients + fp32 master, momentum, variance) = 104 GiB does not fit in 80 GB, so exit 1; the
  // recommendation (ZeRO-1) fits.
  const auto r = run_cli("runbook " + kLlama + " --schedule 1f1b --json");
  CHECK(r.status == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("plan").at("zero") == 0);
  CHECK(j.at("plan").at("dp") == 8);
  CHECK(j.at("plan").at("micro_batch") == 1);
  bool said = false;
  for (const auto& n : j.at("notes"))
    said = said || contains(n.get<std::string>(), "the one the plan flags describe (--schedule");
  CHECK(said);
  // Without any plan flag: the recommendation, said so.
  const auto rec = run_cli("runbook " + kLlama + " --json");
  REQUIRE(rec.status == 0);
  const auto jr = nlohmann::json::parse(rec.out);
  CHECK(jr.at("plan").at("zero").get<int>() >= 1);
  CHECK(contains(jr.at("notes").dump(), "the one `shardplan plan` recommends"));
  // The text output carries the same note.
  CHECK(contains(run_cli("runbook " + kLlama + " --schedule 1f1b").out,
                 "note: plan: dp 8 x tp 1 x pp 1, ZeRO-0"));
}

TEST_CASE("emit names the plan it uses: the flags' plan, or the recommendation") {
  const auto r = run_cli(
      "emit --model llama-2-7b --gpus 16 --global-batch 64 --pp 2 --zero 1 --schedule "
      "interleaved --format megatron");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "--num-virtual-stages-per-pipeline-rank 2"));
  CHECK(contains(r.err, "the one the plan flags describe (--pp, --zero, --schedule"));
  // --allow-tp-across-nodes is a rule for choosing plans, not a plan: the recommendation stays.
  const auto rule = run_cli("emit " + kLlama + " --allow-tp-across-nodes --format megatron");
  REQUIRE(rule.status == 0);
  CHECK(contains(rule.err, "the one `shardplan plan` recommends"));
}

TEST_CASE("provision --gpu takes a comma list with spaces, as every list flag does") {
  // `provision --gpu "H100-SXM, H200"` used to fail with "unknown GPU ' H200'".
  const auto r =
      run_cli("provision --model llama-2-7b --gpu \"H100-SXM, H200\" --gpus 64 --tokens 1T --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> gpus;
  for (const auto& o : j.at("provision").at("options")) gpus.insert(o.at("gpu").get<std::string>());
  CHECK(gpus == std::set<std::string>{"H100-SXM", "H200"});
  // --offload's list is split the same way.
  CHECK(run_cli("estimate " + kLlama + " --zero 3 --framework fsdp --offload \"optimizer, params\"")
            .status != 2);
}
