// What a new user meets first: defaults that never answer a question the user did not ask,
// input that is refused rather than read as "not given", and messages that say what is valid.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::run_cli;

namespace {

using shardplan::test::contains;

bool notes_mention(const nlohmann::json& j, const std::string& part) {
  for (const auto& n : j.at("notes")) {
    if (contains(n.get<std::string>(), part)) return true;
  }
  return false;
}

const char* const kSeventyB = "--model llama-3.1-70b --cluster dgx-h100 --gpus 64";

}  // namespace

TEST_CASE("runbook without plan flags plans the run `plan` recommends, and says so") {
  const auto planned = run_cli(std::string("plan ") + kSeventyB + " --json");
  REQUIRE(planned.status == 0);
  const auto recommended = nlohmann::json::parse(planned.out).at("recommended").at("plan");
  const auto r = run_cli(std::string("runbook ") + kSeventyB + " --json");
  CHECK(r.status == 0);  // was 0 too, for an unsharded plan of 1,234 GiB per device
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("plan").at("summary") == recommended.at("summary"));
  CHECK(j.at("plan").at("zero").get<int>() + j.at("plan").at("tp").get<int>() > 1);
  CHECK(notes_mention(j, "`shardplan plan` recommends"));
  const auto text = run_cli(std::string("runbook ") + kSeventyB);
  CHECK(contains(text.out, "note: plan: " + recommended.at("summary").get<std::string>()));
}

TEST_CASE("emit without plan flags writes the recommended plan's config instead of refusing") {
  const auto r = run_cli(std::string("emit --format megatron ") + kSeventyB);
  REQUIRE(r.status == 0);  // was 1: the unsharded default does not fit
  CHECK(contains(r.err, "`shardplan plan` recommends"));
  CHECK(contains(r.out, "`shardplan plan`'s recommendation"));
}

TEST_CASE("runbook of a plan that does not fit exits 1 and carries the warning in notes[]") {
  const auto r = run_cli(std::string("runbook ") + kSeventyB + " --zero 0 --json");
  CHECK(r.status == 1);  // was 0
  CHECK(contains(r.err, "warning: the plan does not fit"));
  CHECK(notes_mention(nlohmann::json::parse(r.out), "the plan does not fit"));
}

TEST_CASE("the default global batch is 4M tokens whatever the GPU count, stated as a note") {
  long long batch[2] = {0, 0};
  const char* gpus[2] = {"8", "64"};
  for (int i = 0; i < 2; ++i) {
    const auto r = run_cli(std::string("plan --model llama-2-7b --cluster dgx-h100 --gpus ") +
                           gpus[i] + " --json");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    batch[i] = j.at("training").at("global_batch").get<long long>();
    CHECK(notes_mention(j, "--global-batch sets it"));
  }
  CHECK(batch[0] == 1024);  // 4,194,304 tokens / 4,096 (was 8: one sequence per GPU)
  CHECK(batch[1] == 1024);  // (was 64)
  const auto text = run_cli("memory --model llama-2-7b --gpus 8 --zero 1");
  CHECK(contains(text.out, "note: global batch 1024 sequences x 4096 tokens"));
  // A fixed plan rounds the default up to whole micro-batches per rank: 1,024 -> 1,026 for dp 6.
  const auto six = run_cli("memory --model llama-2-7b --gpus 6 --gpus-per-node 6 --zero 1 --json");
  REQUIRE(six.status == 0);
  CHECK(nlohmann::json::parse(six.out).at("training").at("global_batch") == 1026);
}

TEST_CASE("empty values, inconsistent topology and --threads 0 are refused naming the flag") {
  check_refused("memory --model llama-2-7b --gpus ''", "--gpus: is empty");
  check_refused("memory --model llama-2-7b --gpu ''", "--gpu: is empty");
  check_refused("memory --model llama-2-7b --cluster ''", "--cluster: is empty");
  check_refused("emit --format deepspeed --model llama-2-7b --gpus 8 --zero 1 -o ''",
                "--output: is empty");
  check_refused("memory --model llama-2-7b --gpus 8 --gpus-per-node 3",
                "--gpus-per-node: 8 GPUs do not fill whole nodes of 3");
  check_refused("memory --model llama-2-7b --cluster dgx-h100 --gpus 12",
                "--gpus: 12 GPUs do not fill whole nodes of 8");
  check_refused("plan --model llama-2-7b --gpus 8 --threads 0", "--threads: 0 is not between 1");
  check_refused("plan --model llama-2-7b --gpus 8 --threads 100000", "--threads");
}

TEST_CASE("CLI11's own errors come out in shardplan's words, with the nearest flag") {
  check_refused("memory --modle llama-2-7b",
                "shardplan: error: unknown flag '--modle' for `shardplan memory`; did you mean "
                "'--model'?");
  check_refused("plan --model llama-2-7b --gpus 8 --objetive cost", "did you mean '--objective'");
  check_refused("memory --model llama-2-7b --gpus 8 --gpus 16",
                "--gpus is given 2 times ('8' and '16'); give it once");
  check_refused("memory --model llama-2-7b --gpus", "--gpus needs a value");
}

TEST_CASE("ladder: one GPU says why tp and pp cannot run, and blames memory, not the wire") {
  const auto r = run_cli("plan --model llama-3.1-70b --gpus 1");
  CHECK(r.status == 1);
  CHECK(contains(r.out, "tensor parallel needs 2 or more GPUs in a node; this cluster has 1"));
  CHECK(contains(r.out, "pipeline parallel needs 2 or more GPUs; this cluster has 1"));
  CHECK(contains(r.out, "No rung fits in memory"));
  CHECK_FALSE(contains(r.out, "none fits with communication"));
  CHECK(contains(r.out, "micro-batch 1, full recompute"));  // what the failing rungs tried
}

TEST_CASE("ladder: a rung whose data-parallel traffic crosses nodes names the NIC") {
  const auto r =
      run_cli("plan --model llama-2-7b --cluster dgx-h100 --gpus 16 --global-batch 256 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& rungs = j.at("ladder");
  REQUIRE(rungs.size() == 3);
  const auto& stop = rungs.at(2);
  CHECK(stop.at("rung") == "zero-1");
  CHECK(contains(stop.at("reason").get<std::string>(), "over ib-ndr between nodes"));
  CHECK(stop.at("need_bytes").is_null());  // was 0: nothing is needed when it fits
  CHECK(rungs.at(0).at("need_bytes").get<double>() > 0);
}

TEST_CASE("comm: no traffic is exposed for longer than it runs (ZeRO-3 on 10 GbE)") {
  const auto r = run_cli(
      "comm --model llama-3.1-70b --cluster dgx-h100 --gpus 64 --zero 3 --inter 10gbe --seq-len "
      "512 --global-batch 64 --json");
  REQUIRE(r.status == 0);
  const auto d = nlohmann::json::parse(r.out).at("comm").at("data_parallel");
  REQUIRE(d.at("parts").size() == 2);
  for (const auto& part : d.at("parts")) {
    CAPTURE(part.dump());
    CHECK(part.at("exposed_s").get<double>() <= part.at("time_s").get<double>());
  }
  CHECK(d.at("exposed_s").get<double>() <= d.at("time_s").get<double>());
  // The sum names both collectives it covers (was "reduce_scatter" alone).
  CHECK(d.at("collective") == "reduce_scatter+all_gather");
  CHECK(d.at("bytes_per_call").is_null());
}

TEST_CASE("emit: the launch line names the file -o writes") {
  const std::string dir = shardplan::test::make_temp_dir();
  const auto r = run_cli("emit --format deepspeed --model llama-2-7b --gpus 8 --zero 1 -o " + dir +
                         "/my_ds.json");
  REQUIRE(r.status == 0);
  const std::string text = shardplan::test::read_file(dir + "/my_ds.json");
  CHECK(contains(text, "--deepspeed_config " + dir + "/my_ds.json"));
  CHECK_FALSE(contains(text, "ds_config.json"));
}

TEST_CASE("JSON: schema_version and notes on every command; seq_len says which one is used") {
  for (const char* args : {"memory --model qwen2.5-7b --seq-len 4096 --gpus 8 --zero 1 --json",
                           "estimate --model qwen2.5-7b --seq-len 4096 --gpus 8 --zero 1 --json",
                           "comm --model qwen2.5-7b --seq-len 4096 --gpus 8 --zero 1 --json",
                           "runbook --model qwen2.5-7b --seq-len 4096 --gpus 8 --zero 1 --json",
                           "plan --model qwen2.5-7b --seq-len 4096 --gpus 8 --json",
                           "list models --json", "validate --json"}) {
    CAPTURE(args);
    const auto r = run_cli(args);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("schema_version") == 2);
    CHECK(j.at("notes").is_array());
    if (!j.contains("model")) continue;
    CHECK_FALSE(j.at("model").contains("seq_len"));
    CHECK(j.at("model").at("default_seq_len").get<int>() != 4096);
    CHECK(j.at("training").at("seq_len") == 4096);
  }
}
