// Regression tests for what the libFuzzer harnesses (tests/fuzz/) found: every malformed input
// is InputError naming the file or run, never a JSON library exception (which would abort the
// CLI instead of exiting 2).
#include <doctest/doctest.h>

#include <string>

#include "shardplan/error.hpp"
#include "shardplan/plan_file.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using shardplan::InputError;
using shardplan::load_published_runs;

namespace {

const char* const kRun = R"({"id": "r", "model": {"layers": 2, "hidden": 64, "heads": 4},
  "hardware": {"gpu": "A100-80GB", "gpus_total": 8}, "plan": {"dp": 8, "global_batch": 8},
  "measured": {"iteration_time_s": 1.0}})";

std::string with(const std::string& from, const std::string& to) {
  std::string run = kRun;
  const auto at = run.find(from);
  REQUIRE(at != std::string::npos);
  return "[" + run.replace(at, from.size(), to) + "]";
}

}  // namespace

TEST_CASE("published runs: a well-formed run loads (the base the cases below break)") {
  REQUIRE(load_published_runs(std::string("[") + kRun + "]", "runs.json").size() == 1);
}

TEST_CASE("published runs: fuzz findings are InputError naming the run") {
  // Found by fuzz_published_runs: a run without "hardware" threw json out_of_range (abort).
  CHECK_THROWS_WITH_AS(load_published_runs(with(R"("hardware")", R"("hardwar")"), "runs.json"),
                       doctest::Contains("runs.json: run 0: each run needs model, hardware"),
                       InputError);
  // A string where a figure goes, and a count no int holds.
  CHECK_THROWS_WITH_AS(load_published_runs(with("1.0}", "\"fast\"}"), "runs.json"),
                       doctest::Contains("runs.json: run 0: a field has the wrong type"),
                       InputError);
  CHECK_THROWS_AS(load_published_runs(with("\"dp\": 8", "\"dp\": 1e300"), "runs.json"), InputError);
  CHECK_THROWS_AS(load_published_runs(with("\"id\": \"r\"", "\"id\": 7"), "runs.json"), InputError);
}

TEST_CASE("a number no double holds is InputError in every JSON file (fuzz_profiles, plan_file)") {
  // nlohmann/json reports 1e+0794 as out_of_range, which parse_json did not catch.
  const std::string dir = shardplan::test::make_temp_dir();
  shardplan::test::write_file(dir + "/gpu.json", R"({"name": "X", "memory_gib": 1e+0794})");
  CHECK_THROWS_WITH_AS(shardplan::load_gpu(dir + "/gpu.json"),
                       doctest::Contains("a number is too large for a double"), InputError);
  CHECK_THROWS_AS(shardplan::read_plan_file(R"({"model": 1.9e+169209856})", "plan.json",
                                            shardplan::PlanPick::recommended()),
                  InputError);
}

TEST_CASE("HF config: a non-string name or method is ignored, never a JSON library exception") {
  // Found by fuzz_hf_config: "_name_or_path": [...] threw nlohmann's type_error 302 (abort).
  const std::string config =
      shardplan::test::read_file(std::string(SHARDPLAN_TEST_DATA) + "/hf/llama-2-7b/config.json");
  std::string broken = config;
  const std::string name = R"("_name_or_path": "meta-llama/Llama-2-7b-hf")";
  const auto at = broken.find(name);
  REQUIRE(at != std::string::npos);
  broken.replace(at, name.size(), R"("_name_or_path": ["x"], "topk_method": 3)");
  const shardplan::ModelSpec m = shardplan::model_from_hf_config(broken, "config.json");
  CHECK(m.layers == 32);
  CHECK(m.name == "llama");  // the model_type stands in for the missing name
}

TEST_CASE("published runs: a measured block with only a peak memory names every figure it takes") {
  // The message listed four of the six step figures the reader accepts.
  const std::string run = with(R"("iteration_time_s": 1.0)", R"("peak_memory_gib": 70.0)");
  CHECK_THROWS_WITH_AS(load_published_runs(run, "runs.json"),
                       doctest::Contains("give one of tokens_per_s_per_gpu, model_tflops_per_gpu, "
                                         "iteration_time_s, tflops_per_gpu, layer_fwd_bwd_ms, "
                                         "activations_gib (peak_memory_gib is compared beside"),
                       InputError);
}
