// Hugging Face config.json input: the real files of eight families, counted exactly.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

TEST_CASE(
    "config.json of Llama, Mistral, Qwen2, Gemma, Gemma 2, GPT-2, GPT-NeoX, Mixtral count "
    "exactly") {
  // tests/data/hf/EXPECTED.json: published totals with their sources.
  std::ifstream in(std::string(SHARDPLAN_TEST_DATA) + "/hf/EXPECTED.json");
  REQUIRE(in);
  const nlohmann::json expected = nlohmann::json::parse(in);
  REQUIRE(expected.size() == 9);
  for (const auto& e : expected) {
    const std::string dir = e.at("dir");
    const ModelSpec m =
        load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/" + dir + "/config.json");
    CAPTURE(dir);
    CHECK(count_params(m).total == e.at("total_params").get<double>());
  }
}

TEST_CASE("family details that configs leave to code") {
  const std::string base = std::string(SHARDPLAN_TEST_DATA) + "/hf/";
  const ModelSpec qwen = load_model(base + "qwen2.5-7b/config.json");
  CHECK(qwen.qkv_bias);  // Qwen2 has Q/K/V biases, no config key for them
  CHECK_FALSE(qwen.out_bias);
  const ModelSpec gemma = load_model(base + "gemma-7b/config.json");
  CHECK(gemma.mlp == MlpKind::geglu);
  CHECK(gemma.tied_embeddings);
  CHECK(gemma.head_dim * gemma.heads != gemma.hidden);  // 16 x 256 = 4096 != 3072
  const ModelSpec gpt2 = load_model(base + "gpt2/config.json");
  CHECK(gpt2.positions == PositionKind::learned);
  CHECK(gpt2.dropout);
  const ModelSpec mixtral = load_model(base + "mixtral-8x7b/config.json");
  CHECK(mixtral.experts == 8);
  CHECK(mixtral.experts_per_token == 2);
  const ModelSpec llama3 = load_model(base + "llama-3-8b/config.json");
  CHECK(llama3.kv_heads == 8);
  CHECK_FALSE(llama3.dropout);
}

TEST_CASE("malformed config.json names the file and the line") {
  try {
    model_from_hf_config("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}",
                         "bad/config.json");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("bad/config.json") != std::string::npos);
    CHECK(what.find("line 3") != std::string::npos);
  }
  CHECK_THROWS_AS(model_from_hf_config(R"({"model_type": "llama", "hidden_size": 4096})", "x.json"),
                  InputError);
  CHECK_THROWS_AS(
      model_from_hf_config(R"({"model_type": "llama", "hidden_size": -1, "num_hidden_layers": 2,
     "num_attention_heads": 2, "vocab_size": 10})",
                           "x.json"),
      InputError);
}

TEST_CASE("config.json's RoPE, norm epsilon and router fields, and the presets that copy them") {
  const std::string base = std::string(SHARDPLAN_TEST_DATA) + "/hf/";
  const ModelSpec ds = load_model(base + "deepseek-v3/config.json");
  CHECK(ds.rope.theta == 10000);
  CHECK(ds.rope.scaling == RopeScaling::yarn);
  CHECK(ds.rope.factor == 40);
  CHECK(ds.rope.original_positions == 4096);
  CHECK(ds.rope.mscale_all_dim == 1.0);
  CHECK(ds.norm_epsilon == 1e-6);
  CHECK(ds.router.score == RouterScore::sigmoid);
  CHECK(ds.router.topk_scale == 2.5);
  CHECK(ds.router.groups == 8);
  CHECK(ds.router.group_topk == 4);
  CHECK(ds.router.sequence_aux_loss);
  const ModelSpec preset = load_model("deepseek-v3");
  CHECK(preset.rope.factor == ds.rope.factor);
  CHECK(preset.router.score == ds.router.score);
  CHECK(preset.router.topk_scale == ds.router.topk_scale);
  CHECK(preset.router.aux_loss_coeff == 1e-4);  // the report's alpha (Sec. 4.2), not the config's
  const ModelSpec llama = load_model(base + "llama-4-scout/config.json");
  CHECK(llama.rope.theta == 500000);
  CHECK(llama.rope.scaling == RopeScaling::llama3);
  CHECK(llama.rope.high_freq_factor == 1.0);
  const ModelSpec qwen = load_model(base + "qwen3-30b-a3b/config.json");
  CHECK(qwen.rope.theta == 1e6);
  CHECK(qwen.norm_epsilon == 1e-6);
  CHECK(qwen.router.score == RouterScore::softmax);
  CHECK(qwen.router.aux_loss_coeff == 0.001);
  CHECK(load_model("qwen3-30b-a3b").rope.theta == qwen.rope.theta);
  CHECK(load_model("llama-3.1-8b").rope.scaling == RopeScaling::llama3);
}
