// Exact parameter counts from architecture, checked against published totals.
#include "shardplan/model.hpp"

#include <doctest/doctest.h>

#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

TEST_CASE("preset parameter counts equal the published totals exactly") {
  // Hugging Face safetensors metadata / model cards (profiles/models/*.json published_params).
  CHECK(count_params(load_model("llama-2-7b")).total == 6'738'415'616.0);
  CHECK(count_params(load_model("llama-3-8b")).total == 8'030'261'248.0);
  CHECK(count_params(load_model("mixtral-8x7b")).total == 46'702'792'704.0);
  CHECK(count_params(load_model("llama-2-70b")).total == 68'976'648'192.0);
  CHECK(count_params(load_model("llama-3.1-405b")).total == 405'853'388'800.0);
  CHECK(count_params(load_model("mistral-7b")).total == 7'241'732'096.0);
  CHECK(count_params(load_model("qwen2.5-7b")).total == 7'615'616'512.0);
  CHECK(count_params(load_model("gemma-7b")).total == 8'537'680'896.0);
  CHECK(count_params(load_model("gpt2")).total == 124'439'808.0);
}

TEST_CASE("Mixtral: a token visits 2 of 8 experts") {
  // Mistral AI, "Mixtral of Experts" (2024): 47B total, 13B active parameters.
  const ParamCounts c = count_params(load_model("mixtral-8x7b"));
  CHECK(c.active == 12'879'925'248.0);
}

TEST_CASE("GPT presets are within 2% of the GPT-3 paper's rounded sizes") {
  // Brown et al. 2020, Table 2.1 n_params (rounded labels).
  CHECK(test::rel_err(count_params(load_model("gpt3-175b")).total, 175e9) < 0.02);
  CHECK(test::rel_err(count_params(load_model("gpt3-13b")).total, 13e9) < 0.02);
  CHECK(test::rel_err(count_params(load_model("gpt3-1.3b")).total, 1.3e9) < 0.02);
}

TEST_CASE("GPT shapes follow Narayanan et al. 2021 Eq. 2") {
  // P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), plus the final LayerNorm (2h).
  const ModelSpec m = test::gpt(96, 12288, 96);
  const double l = 96, h = 12288, V = 51200, s = 2048;
  const double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  CHECK(count_params(m).total == doctest::Approx(eq2 + 2 * h).epsilon(1e-12));
}

TEST_CASE("tensor and pipeline parallel split the parameters") {
  const ModelSpec m = load_model("llama-2-7b");
  ParallelPlan p = test::plan(1, 8, 4);
  double sum = 0;
  for (int stage = 0; stage < 4; ++stage) sum += device_params(m, p, stage).total();
  // Norms are replicated on every tensor-parallel rank; everything else is split 8 ways.
  const ParamCounts c = count_params(m);
  const double norms = m.layers * c.layer.norms + c.final_norm;
  CHECK(sum * 8 == doctest::Approx(c.total + 7 * norms).epsilon(1e-12));
  // The embedding lives on the first stage and the untied LM head on the last.
  CHECK(device_params(m, p, 0).total() > device_params(m, p, 1).total());
  CHECK(device_params(m, p, 3).total() > device_params(m, p, 1).total());
}
