// --framework on the planning commands: fp8 on an A100 refused alike by estimate, plan and emit;
// `plan --framework F` and `emit` of F's launcher accepting both the recommended and the fastest
// plan over a grid of models and GPU counts; `plan --framework all` side by side.
#include <doctest/doctest.h>
#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::make_temp_dir;
using shardplan::test::run_cli;
using shardplan::test::run_command;
using shardplan::test::write_file;

namespace {

using shardplan::test::contains;

// The launcher's text parsed back in its own syntax (the Megatron script by bash -n).
void check_parses(const std::string& format, const std::string& text, const std::string& dir) {
  if (format == "deepspeed") {
    CHECK(nlohmann::json::parse(text).is_object());
  } else if (format == "torchtitan") {
    CHECK(!toml::parse(text).empty());
  } else if (format == "accelerate") {
    CHECK(YAML::Load(text).IsMap());
  } else {
    write_file(dir + "/run.sh", text);
    CHECK(run_command("bash -n " + dir + "/run.sh").status == 0);
  }
}

}  // namespace

TEST_CASE("fp8 on an A100 is refused by estimate, plan and emit alike") {
  const std::string flags = "--model llama-3.1-8b --gpu A100-80GB --gpus 8 --precision fp8";
  for (const std::string cmd : {"estimate", "plan", "emit --format megatron"}) {
    CAPTURE(cmd);
    const auto r = run_cli(cmd + " " + flags);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "--precision"));
    CHECK(contains(r.err, "no fp8 tensor cores"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("bf16-pure: fsdp plans and prices 8 B/param; megatron and deepspeed refuse it") {
  const std::string flags = "--model llama-2-7b --gpu A100-80GB --gpus 8 --precision bf16-pure";
  const auto planned = run_cli("plan " + flags + " --framework fsdp --json");
  REQUIRE(planned.status == 0);
  const auto j = nlohmann::json::parse(planned.out);
  CHECK(j.at("training").at("precision") == "bf16-pure");
  CHECK(contains(j.at("notes").dump(), "Revisiting BFloat16 Training"));
  const std::string dir = make_temp_dir();
  write_file(dir + "/plan.json", planned.out);
  for (const std::string pick : {"recommended", "fastest"}) {
    CAPTURE(pick);
    REQUIRE_FALSE(j.at(pick).is_null());
    const auto e = run_cli("emit --plan " + dir + "/plan.json --pick " + pick);
    CHECK(e.status == 0);
    CHECK(YAML::Load(e.out)["mixed_precision"].as<std::string>() == "no");
  }
  const auto est = run_cli("estimate " + flags + " --framework fsdp --zero 3 --json");
  REQUIRE(est.status == 0);
  CHECK(nlohmann::json::parse(est.out).at("memory").at("bytes_per_param").at("total") == 8.0);
  const auto text = run_cli("estimate " + flags + " --framework fsdp --zero 3");
  CHECK(contains(text.out, "bf16 pure (no fp32 master weights)"));
  for (const std::string fw : {"megatron", "deepspeed"}) {
    CAPTURE(fw);
    const auto r = run_cli("estimate " + flags + " --framework " + fw + " --zero 1");
    CHECK(r.status == 2);
    CHECK(contains(r.err, "--precision"));
    CHECK(contains(r.err, "bf16-pure"));
    CHECK(r.out.empty());
  }
}

TEST_CASE("the framework is printed in the table and the JSON; megatron by default") {
  const auto table = run_cli("estimate --model llama-3.1-8b --gpus 8 --zero 3 --recompute full");
  REQUIRE(table.status == 0);
  CHECK(contains(table.out, "framework megatron (profiles/frameworks/megatron.json)"));
  const auto json = run_cli(
      "estimate --model llama-3.1-8b --gpus 8 --zero 2 --recompute full --framework fsdp "
      "--json");
  REQUIRE(json.status == 0);
  CHECK(nlohmann::json::parse(json.out).at("training").at("framework") == "fsdp");
  const auto bad = run_cli("estimate --model llama-3.1-8b --gpus 8 --framework jax");
  CHECK(bad.status == 2);
  CHECK(contains(bad.err, "--framework"));
}

TEST_CASE("a framework refuses what it cannot run: DeepSpeed has no interleaved schedule") {
  const auto r = run_cli(
      "estimate --model gpt3-175b --gpus 64 --gpu A100-80GB --tp 8 --pp 8 --interleave 2 "
      "--global-batch 64 --zero 1 --framework deepspeed");
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--interleave"));
  CHECK(contains(r.err, "deepspeed"));
}

TEST_CASE("--dp-shard and --grad-sync: HSDP where the framework runs it, bad values named") {
  const std::string base =
      "estimate --model llama-3.1-8b --cluster dgx-h100 --gpus 16 --inter 25gbe --zero 3 "
      "--global-batch 64 --json ";
  const auto titan = run_cli(base + "--framework torchtitan --dp-shard 8");
  REQUIRE(titan.status == 0);
  const auto j = nlohmann::json::parse(titan.out);
  CHECK(j.at("plan").at("dp_shard") == 8);
  CHECK(j.at("plan").at("dp_replicate") == 2);
  // Megatron-Core and DeepSpeed have no HSDP in their profiles: refused, naming the flag.
  for (const std::string f : {"megatron", "deepspeed"}) {
    check_refused(base + "--framework " + f + " --dp-shard 8", "--dp-shard");
    check_refused(base + "--framework " + f + " --dp-shard 8", "hybrid sharding");
  }
  check_refused(base + "--framework torchtitan --dp-shard 16", "full sharding");
  check_refused(base + "--framework torchtitan --grad-sync sometimes", "--grad-sync");
  check_refused(base + "--framework torchtitan --grad-sync sometimes", "every-micro-batch");
  // Deferred: the reduce-scatter runs once per step, and the JSON says so. Holding the stage's
  // gradients unsharded across the 4 micro-batches (8.03e9 params x 4 B fp32 = 29.9 GiB) takes
  // the 8B model past the H100's 79.65 GiB: a plan that does not fit (status 1), still reported.
  const auto deferred = run_cli(base + "--framework torchtitan --dp-shard 8 --grad-sync deferred");
  REQUIRE(deferred.status == 1);
  CHECK(nlohmann::json::parse(deferred.out).at("training").at("grad_sync") == "deferred");
}

TEST_CASE("emit accepts every plan its framework's planner returns, recommended and fastest") {
  struct Case {
    std::string flags;
  };
  const std::vector<std::string> cases = {
      "--model gpt3-175b --gpu A100-80GB --gpus 512 --global-batch 1536",
      "--model llama-3.1-70b --gpu H100-SXM --gpus 64 --global-batch 256",
      "--model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 64",
  };
  const std::vector<std::pair<std::string, std::string>> frameworks = {{"megatron", "megatron"},
                                                                       {"deepspeed", "deepspeed"},
                                                                       {"torchtitan", "torchtitan"},
                                                                       {"fsdp", "accelerate"}};
  REQUIRE(cases.size() == 3);
  REQUIRE(frameworks.size() == 4);
  const std::string dir = make_temp_dir();
  int emitted = 0;
  for (const auto& flags : cases) {
    for (const auto& entry : frameworks) {
      // Named copies: clang's lambdas (CAPTURE) cannot capture structured bindings.
      const auto& framework = entry.first;
      const auto& format = entry.second;
      CAPTURE(flags);
      CAPTURE(framework);
      const auto plan = run_cli("plan " + flags + " --framework " + framework + " --top 3 --json");
      REQUIRE(plan.status == 0);
      const auto j = nlohmann::json::parse(plan.out);
      CHECK(j.at("training").at("framework") == framework);
      write_file(dir + "/plan.json", plan.out);
      for (const std::string pick : {"recommended", "fastest"}) {
        CAPTURE(pick);
        if (j.at(pick).is_null()) continue;  // no rung passes: nothing to emit
        // No --format: the framework's own launcher.
        const auto e = run_cli("emit --plan " + dir + "/plan.json --pick " + pick);
        CHECK(e.status == 0);
        CHECK(e.err.find("error") == std::string::npos);
        check_parses(format, e.out, dir);
        ++emitted;
      }
    }
  }
  CHECK(emitted >= 20);  // at most a few recommended plans may be missing
}

TEST_CASE("plan --framework all: the best plan per framework side by side") {
  const auto r = run_cli(
      "plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 64 --framework all "
      "--json");
  REQUIRE(r.status == 0);
  const auto rows = nlohmann::json::parse(r.out).at("frameworks");
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].at("framework") == "megatron");
  CHECK(rows[3].at("framework") == "fsdp");
  CHECK(rows[3].at("fastest").at("plan").at("pp") == 1);  // FSDP has no pipeline
  const auto table = run_cli(
      "plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 --global-batch 64 --framework all");
  REQUIRE(table.status == 0);
  CHECK(contains(table.out, "torchtitan"));
}

TEST_CASE("plan --framework all warns under its table where a plan's MFU is above the published") {
  // The issue: such plans carry the warning in every command; the side-by-side table printed
  // none, and dropped the notes (the default batch, pure bf16) that every other command prints.
  const std::string flags =
      "plan --model llama-3.1-8b --gpu H100-SXM --gpus 8 --precision bf16-pure --framework all";
  const auto r = run_cli(flags + " --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(contains(j.at("notes").dump(), "Revisiting BFloat16 Training"));
  CHECK(contains(j.at("notes").dump(), "4M tokens per step"));
  const auto table = run_cli(flags);
  REQUIRE(table.status == 0);
  CHECK(contains(table.out, "note: pure bf16 keeps no fp32 master weights"));
  int warned = 0;
  for (const auto& row : j.at("frameworks")) {
    if (!row.contains("fastest")) continue;  // refused: megatron and deepspeed keep a master
    const std::string fw = row.at("framework");
    CAPTURE(fw);
    const bool high = contains(row.at("fastest").at("notes").dump(), "above the highest published");
    CHECK(contains(table.out, "warning: " + fw + " fastest: MFU") == high);
    warned += high;
  }
  CHECK(warned > 0);  // fsdp's fastest 8B plan is above llm-foundry's 42%
}

TEST_CASE("estimate --json: the step with its validation interval and the class it comes from") {
  const auto r = run_cli(
      "estimate --model gpt3-175b --gpu A100-80GB --gpus 1536 --global-batch 1536 --zero 3 "
      "--recompute full --framework deepspeed --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double step = j.at("step").at("step_s");  // the simulated step
  CHECK(j.at("step").at("source") == "simulated");
  CHECK(j.at("step").at("closed_form_s") == j.at("time").at("step_s"));
  // The interval is the deepspeed profile's A100 class, which tools/update_accuracy.py writes from
  // `validate --cross-validate` (the corpus's size changes it, so it is read, not restated).
  const auto profile = nlohmann::json::parse(shardplan::test::read_file(
      SHARDPLAN_SOURCE_DIR "/profiles/frameworks/deepspeed.json"));
  const auto& a100 = profile.at("accuracy").at(0);
  REQUIRE(a100.at("gpu_class") == "A100");
  const double low = a100.at("step_error_low"), high = a100.at("step_error_high");
  CHECK(low < 0);
  CHECK(high > 0);
  CHECK(j.at("step").at("step_s_low").get<double>() == doctest::Approx(step * (1 + low)));
  CHECK(j.at("step").at("step_s_high").get<double>() == doctest::Approx(step * (1 + high)));
  CHECK(j.at("accuracy").at("class") == "deepspeed x A100");
  CHECK(j.at("accuracy").at("cases") == a100.at("cases"));
  CHECK(j.at("accuracy").at("split") == "held-out");
}

// A plan past what its class's validation runs span takes the interval beyond the corpus and
// says why, in the table and in --json: here twice the GPUs of the largest dense megatron x H100
// case (the profile's reach, which tools/update_accuracy.py writes from the corpus).
TEST_CASE("a plan beyond its class's validation reach says so and takes the wider interval") {
  const auto profile = nlohmann::json::parse(shardplan::test::read_file(
      SHARDPLAN_SOURCE_DIR "/profiles/frameworks/megatron.json"));
  int max_gpus = 0;
  for (const auto& a : profile.at("accuracy"))
    if (a.at("gpu_class") == "H100" && a.at("models") == "dense")
      max_gpus = a.at("reach").at("max_gpus");
  REQUIRE(max_gpus >= 512);
  const int gpus = 2 * max_gpus;
  const std::string flags = "--model llama-3.1-70b --cluster dgx-h100 --gpus " +
                            std::to_string(gpus) + " --tp 8 --pp 4 --global-batch " +
                            std::to_string(gpus / 2) +
                            " --framework megatron --zero 1 --recompute full";
  const auto r = run_cli("estimate " + flags);
  REQUIRE(r.status == 0);
  const std::string why = "the megatron x H100 cases do not span " + std::to_string(gpus) +
                          " GPUs (they reach " + std::to_string(max_gpus) + ")";
  CHECK(contains(r.out, "beyond the validation corpus"));
  CHECK(contains(r.out, why));
  const auto j = nlohmann::json::parse(run_cli("estimate " + flags + " --json").out);
  CHECK(j.at("accuracy").at("beyond_corpus") == why);
  const auto& beyond = profile.at("accuracy_beyond_corpus");
  CHECK(j.at("accuracy").at("step_error_high").get<double>() >=
        beyond.at("step_error_high").get<double>());
}

TEST_CASE("a plan above the framework's highest published MFU carries a warning in every command") {
  // GPT-3 175B on 512 A100s, interleaved 3D parallelism: the model says 65% MFU; Megatron's best
  // published at scale is 56.3% (Korthikanti et al. 2022 Table 5).
  const std::string flags =
      "--model gpt3-175b --gpu A100-80GB --gpus 512 --global-batch 1536 --tp 4 --pp 4 "
      "--interleave 6 --sequence-parallel --zero 1";
  const auto table = run_cli("estimate " + flags);
  REQUIRE(table.status == 0);
  CHECK(contains(table.out, "above the highest published for megatron"));
  const auto j = nlohmann::json::parse(run_cli("estimate " + flags + " --json").out);
  REQUIRE(j.at("notes").size() >= 1);
  CHECK(contains(j.at("notes").back().get<std::string>(), "highest published"));
  const auto plan =
      run_cli("plan --model gpt3-175b --gpu A100-80GB --gpus 512 --global-batch 1536");
  REQUIRE(plan.status == 0);
  CHECK(contains(plan.out, "above the highest published for megatron"));
}
