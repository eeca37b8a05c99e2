// The published-runs reader: a run may name a model preset (any architecture a preset holds,
// MoE included) and an expert-parallel plan, as the MoE rows of framework performance tables
// need.
#include <doctest/doctest.h>

#include <string>

#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/validation.hpp"

using shardplan::InputError;
using shardplan::load_published_runs;

namespace {

std::string run_with(const std::string& model, const std::string& plan_extra) {
  return R"([{"id": "r", "model": )" + model +
         R"(, "hardware": {"gpu": "H100-SXM", "gpus_total": 64},
  "plan": {"dp": 8, "tp": 1, "pp": 8, "global_batch": 512)" + plan_extra +
         R"(}, "measured": {"tokens_per_s_per_gpu": 1000.0}}])";
}

}  // namespace

TEST_CASE("published runs: a model preset with the run's sequence length, and ep / etp") {
  const auto runs =
      load_published_runs(run_with(R"({"preset": "mixtral-8x7b", "seq_len": 4096})",
                                   R"(, "ep": 8, "etp": 1)"),
                          "runs.json");
  REQUIRE(runs.size() == 1);
  // Mixtral 8x7B (Jiang et al. 2024, Table 1): 32 layers, 8 experts, 2 active per token.
  CHECK(runs[0].model.layers == 32);
  CHECK(runs[0].model.experts == 8);
  CHECK(runs[0].model.experts_per_token == 2);
  CHECK(runs[0].model.seq_len == 4096);
  CHECK(runs[0].training.seq_len == 4096);
  CHECK(runs[0].plan.ep == 8);
  CHECK(runs[0].plan.etp == 1);
}

TEST_CASE("published runs: a preset keeps its own sequence length unless the run states one") {
  const auto runs = load_published_runs(run_with(R"({"preset": "llama-3-8b"})", ""), "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].model.seq_len == 8192);  // the preset's (Meta Llama 3 model card: 8k context)
  CHECK(runs[0].model.experts == 0);
  CHECK(runs[0].plan.ep == 1);
}

TEST_CASE("published runs: a preset with shape keys beside it, or an unknown preset, is refused") {
  CHECK_THROWS_WITH_AS(
      load_published_runs(run_with(R"({"preset": "llama-3-8b", "layers": 16})", ""), "runs.json"),
      doctest::Contains("runs.json: run 0: model.layers"), InputError);
  CHECK_THROWS_AS(load_published_runs(run_with(R"({"preset": "no-such-model"})", ""), "runs.json"),
                  InputError);
  CHECK_THROWS_AS(load_published_runs(run_with(R"({"preset": 7})", ""), "runs.json"), InputError);
}

TEST_CASE("published runs: a run may state its tensor-parallel communication overlapped") {
  std::string text = run_with(R"({"preset": "llama-3-8b"})", "");
  const std::string key = R"("measured")";
  text.replace(text.find(key), key.size(), R"("tp_comm_overlap": true, "measured")");
  const auto runs = load_published_runs(text, "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].training.tp_comm_overlap);
  CHECK_FALSE(load_published_runs(run_with(R"({"preset": "llama-3-8b"})", ""), "runs.json")[0]
                  .training.tp_comm_overlap);
}

TEST_CASE("published runs: a stated uneven pipeline split reaches the plan") {
  // Llama 3.1 405B's 126 layers on PP8 x VP8 with the embedding and the loss counted as layers
  // (Megatron-Bridge recipes/llama/llama3.py, account_for_*_in_pipeline_split): 128 / 64 = 2 per
  // chunk, so the first and the last chunk hold one transformer layer each.
  const auto runs = load_published_runs(
      run_with(R"({"preset": "llama-3.1-405b"})",
               R"(, "interleave": 8, "first_stage_layers": 1, "last_stage_layers": 1)"),
      "runs.json");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].plan.first_stage_layers == 1);
  CHECK(runs[0].plan.last_stage_layers == 1);
  CHECK(load_published_runs(run_with(R"({"preset": "llama-3.1-405b"})", ""), "runs.json")[0]
            .plan.first_stage_layers == -1);
}
