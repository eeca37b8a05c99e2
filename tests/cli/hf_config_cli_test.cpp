// Hugging Face configs as a user passes them: a model directory, missing fields, architectures
// shardplan does not model, and a preset that must agree with its model's config.json.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support.hpp"

using shardplan::test::run_cli;

namespace {
using shardplan::test::contains;
const std::string kHf = std::string(SHARDPLAN_TEST_DATA) + "/hf/";
}  // namespace

TEST_CASE("a model directory reads its config.json") {
  const auto r = run_cli("memory --model " + kHf + "qwen2.5-7b --gpus 8 --zero 3 --json");
  CHECK(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("model").at("params") == 7'615'616'512.0);
  const std::string empty = shardplan::test::make_temp_dir();
  shardplan::test::check_refused("memory --model " + empty, "config.json");
}

TEST_CASE("a config without model_type names the field and the supported types") {
  const std::string dir = shardplan::test::make_temp_dir();
  shardplan::test::write_file(dir + "/config.json",
                              R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                                  "num_hidden_layers": 32, "num_attention_heads": 32,
                                  "intermediate_size": 11008, "vocab_size": 32000})");
  const auto r = run_cli("memory --model " + dir);
  CHECK(r.status == 2);
  CHECK(contains(r.err, "model_type"));
  CHECK(contains(r.err, "deepseek_v3"));
}

TEST_CASE("a config with neither model_type nor architectures is still read as a config.json") {
  // Before: such a file fell through to shardplan's own model format ("name: missing").
  const std::string dir = shardplan::test::make_temp_dir();
  const std::string body = R"({"hidden_size": 3584, "num_hidden_layers": 28,
                               "num_attention_heads": 28, "intermediate_size": 18944,
                               "vocab_size": 152064})";
  shardplan::test::write_file(dir + "/config.json", body);
  shardplan::test::write_file(dir + "/renamed.json", body);
  for (const std::string file : {"/config.json", "/renamed.json"}) {
    CAPTURE(file);
    const auto r = run_cli("memory --model " + dir + file);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "model_type"));
    CHECK_FALSE(contains(r.err, "name: missing"));
  }
}

TEST_CASE("a config without intermediate_size is refused, not made a 4h MLP") {
  const std::string dir = shardplan::test::make_temp_dir();
  shardplan::test::write_file(dir + "/config.json",
                              R"({"model_type": "qwen2", "hidden_size": 3584,
                                  "num_hidden_layers": 28, "num_attention_heads": 28,
                                  "num_key_value_heads": 4, "vocab_size": 152064})");
  shardplan::test::check_refused("memory --model " + dir + "/config.json", "intermediate_size");
}

TEST_CASE("GPT-2's missing n_inner is its code's 4h, stated as a note") {
  const std::string dir = shardplan::test::make_temp_dir();
  shardplan::test::write_file(dir + "/config.json",
                              R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12,
                                  "n_head": 12, "n_positions": 1024, "vocab_size": 50257})");
  const auto r = run_cli("memory --model " + dir + " --json");
  CHECK(r.status == 0);
  CHECK(contains(r.err, "note"));
  CHECK(contains(r.err, "4 x hidden = 3072"));
}

TEST_CASE("architectures that are not decoder-only transformers are refused by name") {
  for (const char* type : {"bert", "mamba", "t5"}) {
    CAPTURE(type);
    const std::string dir = shardplan::test::make_temp_dir();
    shardplan::test::write_file(dir + "/config.json",
                                std::string(R"({"model_type": ")") + type +
                                    R"(", "hidden_size": 768, "num_hidden_layers": 12,
                                    "num_attention_heads": 12, "intermediate_size": 3072,
                                    "vocab_size": 30522})");
    const auto r = run_cli("memory --model " + dir);
    CHECK(r.status == 2);
    CHECK(contains(r.err, std::string("'") + type + "'"));
    CHECK(contains(r.err, "supported: "));
    CHECK(contains(r.err, "qwen3_moe"));
  }
}

TEST_CASE("a preset and its config.json train at the same default sequence length") {
  // Qwen2.5-7B: the preset's 32,768 (report) and the config's 131,072 both cap at 8,192.
  const auto preset = run_cli("estimate --model qwen2.5-7b --gpus 8 --zero 3 --json");
  const auto config =
      run_cli("estimate --model " + kHf + "qwen2.5-7b/config.json --gpus 8 --zero 3 --json");
  REQUIRE(preset.status == 0);
  REQUIRE(config.status == 0);
  const auto a = nlohmann::json::parse(preset.out);
  const auto b = nlohmann::json::parse(config.out);
  CHECK(a.at("training").at("seq_len") == 8192);
  CHECK(b.at("training").at("seq_len") == 8192);
  CHECK(a.at("model").at("params") == b.at("model").at("params"));
}

TEST_CASE("the new MoE and windowed configs load and match their presets' counts") {
  const char* pairs[][2] = {{"deepseek-v3", "deepseek-v3"},
                            {"qwen3-30b-a3b", "qwen3-30b-a3b"},
                            {"qwen3-235b-a22b", "qwen3-235b-a22b"},
                            {"llama-4-scout", "llama-4-scout"},
                            {"llama-4-maverick", "llama-4-maverick"},
                            {"gemma-2-9b", "gemma-2-9b"},
                            {"gemma-3-27b", "gemma-3-27b"}};
  for (const auto& p : pairs) {
    CAPTURE(p[0]);
    const auto from_preset =
        run_cli(std::string("memory --json --gpus 64 --zero 3 --model ") + p[1]);
    const auto from_config =
        run_cli("memory --json --gpus 64 --zero 3 --model " + kHf + p[0] + "/config.json");
    REQUIRE(from_preset.status != 2);
    REQUIRE(from_config.status != 2);
    const auto x = nlohmann::json::parse(from_preset.out);
    const auto y = nlohmann::json::parse(from_config.out);
    CHECK(x.at("model").at("params") == y.at("model").at("params"));
    CHECK(x.at("model").at("active_params") == y.at("model").at("active_params"));
  }
}

TEST_CASE("list models shows total and active parameters") {
  const auto r = run_cli("list models");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "deepseek-v3"));
  CHECK(contains(r.out, "active"));
}
