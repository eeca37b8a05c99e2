// Bad input a careful user still met (issue 21): each refused with the flag, the value and what
// is valid, or a silent no-op turned into a file or a reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::check_refused;
using shardplan::test::run_cli;

namespace {
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("--model /dev/zero ends at once with exit 2") {
  // Before: read forever (6.4 GB resident in 8 s).
  check_refused("memory --model /dev/zero --gpus 8", "not a regular file");
}

TEST_CASE("--seed takes 0 to 2^32-1 in digits and refuses 7B") {
  const std::string emit = "emit --format megatron --model gpt2 --gpus 8 --zero 1 --seed ";
  // Before: 0 was refused and 7B silently became 2147483647.
  const auto zero = run_cli(emit + "0");
  REQUIRE(zero.status == 0);
  CHECK(has(zero.out, "--seed 0"));
  const auto top = run_cli(emit + "4294967295");
  REQUIRE(top.status == 0);
  CHECK(has(top.out, "--seed 4294967295"));
  check_refused(emit + "7B", "'7B' is not a seed");
  check_refused(emit + "4294967296", "at most 4294967295");
  check_refused(emit + "-1", "--seed");
}

TEST_CASE("a count past its limit says too large, with the limit") {
  // Before: "must be a whole number".
  check_refused("memory --model llama-3-8b --gpus 99999999999999999999", "too large; at most");
  check_refused("memory --model llama-3-8b --gpus 2.5", "must be a whole number");
}

TEST_CASE("a negative link bandwidth is refused as a bandwidth, not an unknown link") {
  // Before: "unknown link '-5GB/s'; nearest 25gbe".
  const auto r = run_cli("estimate --model llama-3-8b --gpus 8 --zero 1 --link -5GB/s");
  CHECK(r.status == 2);
  CHECK(has(r.err, "--link"));
  CHECK(has(r.err, "greater than zero"));
  CHECK_FALSE(has(r.err, "unknown link"));
}

TEST_CASE("validate on an empty array says the file holds no runs") {
  const std::string dir = shardplan::test::make_temp_dir();
  shardplan::test::write_file(dir + "/array.json", "[]");
  // Before: "--only: no run id starts with ''" although --only was not given.
  const auto r = run_cli("validate " + dir + "/array.json");
  CHECK(r.status == 2);
  CHECK(has(r.err, "holds no runs"));
  CHECK_FALSE(has(r.err, "--only"));
}

TEST_CASE("report on malformed JSON says malformed, with the line") {
  const std::string dir = shardplan::test::make_temp_dir();
  shardplan::test::write_file(dir + "/bad.json", "{\n  \"gpus\": 8,,\n}");
  // Before: "'bad.json' is not a JSON object".
  const auto r = run_cli("report " + dir + "/bad.json --html " + dir + "/out.html");
  CHECK(r.status == 2);
  CHECK(has(r.err, "malformed JSON at line 2"));
  shardplan::test::write_file(dir + "/array.json", "[1, 2]");
  check_refused("report " + dir + "/array.json --html " + dir + "/out.html", "not an object");
}

TEST_CASE("report names a probe profile's field of the wrong type and writes no page") {
  // Before: "internal error (a bug; please report it): [json.exception.type_error.302] type
  // must be number, but is string", exit 134, for a hand-edited or truncated profile.
  const std::string dir = shardplan::test::make_temp_dir();
  auto profile = nlohmann::json::parse(shardplan::test::read_file(std::string(SHARDPLAN_TEST_DATA) +
                                                                  "/probe/probe-mpi-2ranks.json"));
  profile["fit"]["tiers"]["intra"]["collectives"]["all_reduce"]["slope_from_bytes"] = "x";
  shardplan::test::write_file(dir + "/typo.json", profile.dump());
  const auto r = run_cli("report " + dir + "/typo.json --html " + dir + "/out.html");
  CHECK(r.status == 2);
  CHECK(has(r.err, "fit.tiers.intra.collectives.all_reduce.slope_from_bytes: expected a number"));
  CHECK_FALSE(std::filesystem::exists(dir + "/out.html"));
  profile.erase("measurements");
  shardplan::test::write_file(dir + "/none.json", profile.dump());
  check_refused("report " + dir + "/none.json --html " + dir + "/out.html", "no measurements");
}

TEST_CASE("plan --trace writes the file whenever the search finds a plan") {
  const std::string dir = shardplan::test::make_temp_dir();
  const std::string trace = dir + "/F.json";
  // Before: exit 0 and no file (the ladder recommended no plan, so nothing was traced).
  const auto r = run_cli("plan --model llama-3.1-70b --gpus 8 --trace " + trace);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(shardplan::test::read_file(trace));
  CHECK(j.contains("traceEvents"));
}

TEST_CASE("ZeRO rungs with a batch that cannot spread say so, not 'pipeline schedule'") {
  // Before: the ZeRO rungs said "the framework runs no pipeline schedule this rung needs":
  // their schedule axis (meaningless without stages) held most of the refused points.
  const auto r = run_cli("plan --model llama-3.1-8b --gpus 1024 --global-batch 8");
  CHECK(r.status == 0);  // pipeline stages leave few enough data-parallel ranks
  CHECK_FALSE(has(r.out, "pipeline schedule"));
  CHECK(has(r.out, "rule batch_split"));
}

TEST_CASE("a million GPUs: the batch cannot spread, which is not a memory problem") {
  // Before: "No rung fits in memory".
  const auto r = run_cli("plan --model llama-3.1-70b --gpus 1000000");
  CHECK(r.status == 1);
  CHECK_FALSE(has(r.out, "No rung fits in memory"));
  CHECK(has(r.out, "global batch is too small"));
  // Every rung, the pipeline one too: a framework without ZB-V is not why it has no plan.
  CHECK_FALSE(has(r.out, "pipeline schedule"));
}

TEST_CASE("validate --markdown goes with --cross-validate; --cross-validate prints its coverage") {
  check_refused("validate --markdown", "--markdown");  // ignored before: a flag that did nothing
  const auto r = run_cli("validate --cross-validate --only korthikanti22");
  CHECK(r.status == 0);
  CHECK(has(r.out, "coverage of the 80% interval"));
  // Korthikanti et al. 2022 ran A100s in mixed precision (fp16): the generation x precision
  // row, and the peak-memory table (the paper publishes no peak: no case).
  CHECK(has(r.out, "## step-time |error| per GPU generation x precision recipe (held out)"));
  CHECK(has(r.out, "\nA100 fp16 "));
  CHECK(has(r.out, "## peak device memory against the published peak"));
  check_refused("validate --cross-validate --only nosuchrun", "--only");
}

TEST_CASE("a block-pattern model keeps its pattern's layer count and MoE blocks") {
  // Before: --layers 60 on nemotron-h-8b read past its 52-character pattern.
  check_refused("memory --model nemotron-h-8b --gpus 8 --layers 60", "--layers cannot change");
  check_refused("memory --model nemotron-h-8b --gpus 8 --experts 8", "not add or remove them");
  check_refused("memory --model nemotron-3-nano-30b-a3b --gpus 8 --experts 1",
                "not add or remove them");
}

TEST_CASE("a Mamba-2 hybrid refuses context parallel and a tp that splits its groups") {
  check_refused("estimate --model nemotron-h-8b --cluster dgx-h100 --gpus 16 --cp 2",
                "MambaContextParallel");
  check_refused("estimate --model nemotron-h-8b --cluster dgx-h100 --gpus 16 --tp 16 "
                "--allow-tp-across-nodes",
                "8 groups");
}
