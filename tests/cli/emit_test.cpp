// `shardplan emit` from the command line: plans by flags or by file, the estimate's step time
// and the runbook's interval in the output, -o written atomically, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "launch/megatron_rules.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using shardplan::test::contains;
using shardplan::test::make_temp_dir;
using shardplan::test::read_file;
using shardplan::test::run_cli;
using shardplan::test::write_file;

namespace {

const std::string kGpt3 =
    "--model gpt3-175b --cluster dgx-a100 --gpus 1024 --tp 8 --pp 8 --global-batch 1536 "
    "--micro-batch 1 "
    "--zero 1 --recompute full";

double step_s(const std::string& flags) {
  const auto r = run_cli("estimate " + flags + " --json");
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out).at("step").at("step_s");  // the simulated step
}

}  // namespace

TEST_CASE("emit --format deepspeed: 30-minute checkpoints in steps of the estimate's step time") {
  const auto r = run_cli("emit --format deepspeed " + kGpt3);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("train_batch_size") == 1536);
  CHECK(j.at("gradient_accumulation_steps") == 96);
  // Priced as DeepSpeed runs it (its pipeline engine), as emit --format deepspeed does.
  CHECK(j.at("_shardplan").at("long_run").at("checkpoint_interval_steps") ==
        std::lround(1800 / step_s(kGpt3 + " --framework deepspeed")));
}

TEST_CASE("emit --checkpoint-interval auto uses the runbook's Young interval") {
  const auto rb = run_cli("runbook " + kGpt3 + " --json");
  REQUIRE(rb.status == 0);
  const int young_steps = nlohmann::json::parse(rb.out).at("checkpoint").at("interval_steps");
  const auto r = run_cli("emit --format megatron --checkpoint-interval auto " + kGpt3);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "  --save-interval " + std::to_string(young_steps) + "\n"));
  CHECK(contains(r.out, "the runbook's Young interval"));
  const auto given =
      run_cli("emit --format megatron --checkpoint-interval 2h --keep-last 5 " + kGpt3);
  CHECK(contains(given.out,
                 "  --save-interval " + std::to_string(std::lround(7200 / step_s(kGpt3))) + "\n"));
  CHECK(contains(given.out, "KEEP_LAST=\"5\""));
}

TEST_CASE("emit --plan FILE: an estimate --json file gives the same config as the flags") {
  const std::string dir = make_temp_dir();
  // The plan priced for DeepSpeed, as `emit --format deepspeed` with flags prices it.
  const auto est = run_cli("estimate " + kGpt3 + " --framework deepspeed --json");
  REQUIRE(est.status == 0);
  write_file(dir + "/plan.json", est.out);
  const auto from_file = run_cli("emit --format torchtitan --zero 2 --plan " + dir + "/plan.json");
  CHECK(from_file.status == 2);  // planning flags and --plan together
  CHECK(contains(from_file.err, "--zero"));
  const auto a = run_cli("emit --format deepspeed --plan " + dir + "/plan.json");
  const auto b = run_cli("emit --format deepspeed " + kGpt3);
  REQUIRE(a.status == 0);
  auto ja = nlohmann::json::parse(a.out);
  auto jb = nlohmann::json::parse(b.out);
  CHECK(ja.at("_shardplan").at("plan") == jb.at("_shardplan").at("plan"));
  CHECK(ja.at("_shardplan").at("long_run") == jb.at("_shardplan").at("long_run"));
  ja.erase("_shardplan");
  jb.erase("_shardplan");
  CHECK(ja == jb);
  CHECK(contains(a.out, "plan from " + dir + "/plan.json"));
}

TEST_CASE("emit --plan FILE from plan --json: the recommended plan, or --pick fastest") {
  const std::string dir = make_temp_dir();
  const auto zero1 = nlohmann::json::parse(run_cli("estimate " + kGpt3 + " --json").out);
  std::string zero0_flags = kGpt3;
  zero0_flags.replace(zero0_flags.find("--zero 1"), 8, "--zero 0");
  const auto zero0 = nlohmann::json::parse(run_cli("estimate " + zero0_flags + " --json").out);
  nlohmann::json plan = {
      {"model", zero1["model"]}, {"cluster", zero1["cluster"]}, {"training", zero1["training"]}};
  for (const char* key : {"plan", "time", "throughput", "memory", "comm"}) {
    plan["recommended"][key] = zero1[key];
    plan["fastest"][key] = zero0[key];
  }
  plan["recommended"]["rung"] = "pipeline parallel";
  write_file(dir + "/plan.json", plan.dump());
  const auto rec = run_cli("emit --format deepspeed --plan " + dir + "/plan.json");
  REQUIRE(rec.status == 0);
  CHECK(nlohmann::json::parse(rec.out).at("zero_optimization").at("stage") == 1);
  const auto fast = run_cli("emit --format deepspeed --plan " + dir + "/plan.json --pick fastest");
  REQUIRE(fast.status == 0);
  CHECK(nlohmann::json::parse(fast.out).at("zero_optimization").at("stage") == 0);
  CHECK(contains(fast.out, "plan.json: fastest"));
}

TEST_CASE("emit -o FILE replaces the file whole, and leaves it alone on failure") {
  const std::string dir = make_temp_dir();
  const std::string out = dir + "/ds_config.json";
  write_file(out, "previous\n");
  const auto ok = run_cli("emit --format deepspeed -o " + out + " " + kGpt3);
  REQUIRE(ok.status == 0);
  CHECK(ok.out.empty());
  CHECK(contains(ok.err, "wrote " + out));
  const std::string written = read_file(out);
  CHECK(nlohmann::json::parse(written).at("train_batch_size") == 1536);
  const auto bad = run_cli("emit --format accelerate -o " + out + " " + kGpt3);
  CHECK(bad.status == 2);
  CHECK(read_file(out) == written);
  CHECK(std::system(("test $(ls -A " + dir + " | wc -l) -eq 1").c_str()) ==
        0);  // no temporary left
}

TEST_CASE("emit writes nothing for a plan that does not fit in memory (exit 1)") {
  const auto r = run_cli("emit --format deepspeed --params 7e9 --gpus 1 --gpu H100-SXM --zero 0");
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "104.91 GiB per device"));  // 7B x 16 B = 104.3 GiB, + overheads
}

TEST_CASE("emit refuses what a launcher cannot run, and bad input, naming the field") {
  const std::string dir = make_temp_dir();
  write_file(dir + "/broken.json", "{\"model\": ");
  write_file(dir + "/typo.json", [] {
    auto j = nlohmann::json::parse(run_cli("estimate " + kGpt3 + " --json").out);
    j["plan"]["pipline"] = 8;
    return j.dump();
  }());
  std::string zero3 = kGpt3;
  zero3.replace(zero3.find("--zero 1"), 8, "--zero 3");
  std::string zero2 = kGpt3;
  zero2.replace(zero2.find("--zero 1"), 8, "--zero 2");
  struct Case {
    std::string args;
    const char* field;
    const char* reason;
  };
  const Case cases[] = {
      {"emit --format megatron " + zero3, "--zero", "pipeline"},
      {"emit --format deepspeed " + zero2, "--zero", "ZeRO stages up to 1 only"},
      {"emit --format accelerate " + kGpt3, "--pp", "no pipeline parallelism"},
      {"emit --format torchtitan " + kGpt3, "--zero", "no ZeRO-1"},
      {"emit --format slurm " + kGpt3, "--format", "deepspeed, megatron, torchtitan or accelerate"},
      {"emit --framework jax " + kGpt3, "--framework", "megatron, deepspeed, torchtitan or fsdp"},
      {"emit --format deepspeed --plan " + dir + "/missing.json", "--plan", ""},
      {"emit --format deepspeed --plan " + dir + "/broken.json", "broken.json", ""},
      {"emit --format deepspeed --plan " + dir + "/typo.json", "plan: pipline", ""},
      {"emit --format deepspeed --pick fastest " + kGpt3, "--pick", ""},
      {"emit --format deepspeed --seed -3 " + kGpt3, "--seed", ""},
  };
  for (const Case& c : cases) {
    shardplan::test::check_refused(c.args, c.field);
    shardplan::test::check_refused(c.args, c.reason);
  }
}

namespace {

// A `plan --json` file for the model, then both picks emitted as Megatron-LM scripts, each run
// through Megatron-LM's start-up rules (tests/launch/megatron_rules.hpp).
void check_both_picks(const std::string& model, const std::string& flags) {
  const std::string dir = make_temp_dir();
  const auto plan = run_cli("plan --model " + model + " " + flags + " --framework megatron --json");
  REQUIRE(plan.status == 0);
  write_file(dir + "/plan.json", plan.out);
  for (const char* pick : {"recommended", "fastest"}) {
    CAPTURE(model);
    CAPTURE(std::string(pick));
    const auto r = run_cli("emit --format megatron --plan " + dir + "/plan.json --pick " + pick +
                           " -o " + dir + "/megatron.sh --slurm " + dir + "/job.slurm");
    REQUIRE(r.status == 0);
    const auto launch = shardplan::test::run_megatron_script(read_file(dir + "/megatron.sh"));
    std::string failures;
    for (const auto& f : shardplan::test::megatron_failures(launch, shardplan::load_model(model)))
      failures += f + "\n";
    CHECK_MESSAGE(failures.empty(), failures);
    const std::string slurm = read_file(dir + "/job.slurm");
    CHECK(contains(slurm, "srun --nodes=" + std::to_string(launch.world_size / 8)));
    CHECK(contains(slurm, "bash " + dir + "/megatron.sh"));
    CHECK(std::system(("bash -n " + dir + "/job.slurm").c_str()) == 0);
  }
}

}  // namespace

TEST_CASE("emit --plan FILE --pick recommended|fastest: Megatron-LM scripts that pass its rules") {
  check_both_picks("llama-3.1-8b", "--cluster dgx-h100 --gpus 16");
  check_both_picks("mixtral-8x7b", "--cluster dgx-h100 --gpus 64");
  check_both_picks("qwen3-30b-a3b", "--cluster dgx-h100 --gpus 32");
  check_both_picks("deepseek-v3",
                   "--cluster h800-deepseek --gpus 2048 --global-batch 15360 --precision fp8");
}

TEST_CASE("emit --lr and friends replace the published recipe, named in the header") {
  const auto r = run_cli("emit --format megatron " + kGpt3 +
                         " --lr 1e-4 --warmup-steps 50 --adam-betas 0.9,0.98 --tokens 300B");
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "  --lr 0.0001\n"));
  CHECK(contains(r.out, "  --min-lr 1e-05\n"));  // the recipe's 10% of the peak
  CHECK(contains(r.out, "  --lr-warmup-iters 50\n"));
  CHECK(contains(r.out, "  --adam-beta2 0.98\n"));
  CHECK(contains(r.out, "--lr 1e-4, --warmup-steps 50, --adam-betas 0.9,0.98 over GPT-3 175B's"));
  const auto bad = run_cli("emit --format megatron " + kGpt3 + " --lr 1e-4 --min-lr 1e-3");
  CHECK(bad.status == 2);
  CHECK(contains(bad.err, "--min-lr"));
  const auto betas = run_cli("emit --format megatron " + kGpt3 + " --adam-betas 0.9");
  CHECK(betas.status == 2);
  CHECK(contains(betas.err, "--adam-betas"));
  const auto same = run_cli("emit --format megatron " + kGpt3 + " -o x.sh --slurm x.sh");
  CHECK(same.status == 2);
  CHECK(contains(same.err, "--slurm"));
}

TEST_CASE("the README's DeepSeek-V3 and Llama 3.1 405B emit examples pass Megatron-LM's rules") {
  const std::string dir = make_temp_dir();
  const std::pair<const char*, std::string> examples[] = {
      {"deepseek-v3",
       "--model deepseek-v3 --cluster h800-deepseek --gpus 2048 --pp 16 --ep 64 --zero 1 "
       "--global-batch 15360 --precision fp8-blockwise --recompute full --tokens 14.8T "
       "--moe-dispatcher deepep"},
      {"llama-3.1-405b",
       "--model llama-3.1-405b --cluster dgx-h100 --gpus 16384 --tp 8 --pp 16 --interleave 2 "
       "--first-stage-layers 3 --last-stage-layers 3 --global-batch 2048 --seq-len 8192 "
       "--sequence-parallel --zero 1 --fragmentation 0.04"},
  };
  for (const auto& example : examples) {
    const auto& [model, flags] = example;
    const std::string command = flags;  // CAPTURE cannot name a structured binding (clang 14)
    CAPTURE(command);
    const auto r = run_cli("emit --format megatron " + flags + " -o " + dir + "/m.sh");
    REQUIRE(r.status == 0);
    const auto launch = shardplan::test::run_megatron_script(read_file(dir + "/m.sh"));
    std::string failures;
    for (const auto& f : shardplan::test::megatron_failures(launch, shardplan::load_model(model)))
      failures += f + "\n";
    CHECK_MESSAGE(failures.empty(), failures);
  }
}
