// Hugging Face config.json input: the real files of fourteen families, counted exactly.
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
    "config.json of Llama, Mistral, Qwen2, Gemma, Gemma 2, GPT-2, GPT-NeoX, Mixtral, gpt-oss, "
    "Nemotron, GLM-4.5, Kimi K2, Qwen3-Next, Nemotron-H, MiniMax-01 and DeepSeek-V2 count exactly") {
  // tests/data/hf/EXPECTED.json: published totals with their sources.
  std::ifstream in(std::string(SHARDPLAN_TEST_DATA) + "/hf/EXPECTED.json");
  REQUIRE(in);
  const nlohmann::json expected = nlohmann::json::parse(in);
  REQUIRE(expected.size() == 20);
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

namespace {
ParamCounts counts_of(const std::string& dir) {
  return count_params(load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/" + dir + "/config.json"));
}

// mixer_layer_count() counts from the pattern or the hybrid period; this visits every layer.
void check_mixer_counts(const ModelSpec& m) {
  for (const MixerKind kind : {MixerKind::attention, MixerKind::gated_deltanet,
                               MixerKind::lightning, MixerKind::mamba2, MixerKind::none}) {
    int n = 0;
    for (int i = 0; i < m.layers; ++i) n += m.mixer_of(i) == kind ? 1 : 0;
    CHECK(m.mixer_layer_count(kind) == n);
  }
}
}  // namespace

TEST_CASE("gpt-oss: active parameters as its model card counts them") {
  // arXiv:2508.10925 Table 1: 5.13B (120b) and 3.61B (20b) active, the unembedding counted and
  // the embedding lookup not; shardplan's `active` counts both tables.
  const ParamCounts big = counts_of("gpt-oss-120b");
  CHECK(big.active - big.embedding == 5'132'849'472.0);
  const ParamCounts small = counts_of("gpt-oss-20b");
  CHECK(small.active - small.embedding == 3'608'307'264.0);
  // Table 1's split of the 120b: attention 0.96B over 36 layers (with biases and sinks).
  CHECK(36 * big.layer.attention == 955'805'184.0);
  const ModelSpec m = load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/gpt-oss-120b/config.json");
  CHECK(m.sliding_window == 128);
  CHECK(m.global_attention_every == 2);  // layer_types: sliding, full, sliding, full, ...
  CHECK(m.attention_sinks);
  CHECK(m.mlp_bias);
  CHECK_FALSE(m.tied_embeddings);
}

TEST_CASE("Nemotron-4 340B: squared-ReLU MLP, 9.4B embedding and 331.6B other parameters") {
  const ModelSpec m =
      load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/nemotron-4-340b/config.json");
  CHECK(m.mlp == MlpKind::squared_relu);
  CHECK(m.norm == NormKind::layernorm);
  CHECK_FALSE(m.qkv_bias);
  const ParamCounts c = count_params(m);
  // Nemotron-4 340B report (arXiv:2406.11704): 9.4B embedding, 331.6B non-embedding.
  CHECK(c.embedding + c.lm_head == 9'437'184'000.0);
  CHECK(c.total - c.embedding - c.lm_head == doctest::Approx(331.6e9).epsilon(0.0002));
}

TEST_CASE("GLM-4.5: 355B with its MTP layer and without the embeddings, 32B activated") {
  const ParamCounts c = counts_of("glm-4.5");
  // arXiv:2508.06471 Table 1 counts the MTP layer and not the embedding tables.
  CHECK(c.total + c.mtp - c.embedding - c.lm_head == 355'234'006'336.0);
  CHECK(c.active - c.embedding - c.lm_head == doctest::Approx(32e9).epsilon(0.02));
  const ModelSpec m = load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/glm-4.5/config.json");
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.out_bias);
  CHECK(m.qk_norm);
  CHECK(m.first_dense_layers == 3);
  CHECK(m.mtp_layers == 1);
}

TEST_CASE("Kimi K2 reads as DeepSeek-V3's architecture: MLA, 384 experts, one dense layer") {
  const ModelSpec m = load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/kimi-k2/config.json");
  CHECK(m.is_mla());
  CHECK(m.experts == 384);
  CHECK(m.first_dense_layers == 1);
  CHECK(m.router_bias);
  // Kimi K2 (arXiv:2507.20534): 32B activated; within 3% counting the LM head but not the
  // embedding lookup.
  const ParamCounts c = count_params(m);
  CHECK(c.active - c.embedding == doctest::Approx(32e9).epsilon(0.03));
}

TEST_CASE("Qwen3-Next: three gated DeltaNet layers to one gated attention layer") {
  const ModelSpec m =
      load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/qwen3-next-80b-a3b/config.json");
  REQUIRE(m.is_hybrid());
  CHECK(m.linear_attention_layer_count() == 36);
  CHECK(m.mixer_layer_count(MixerKind::gated_deltanet) == 36);
  CHECK(m.mixer_layer_count(MixerKind::attention) == 12);
  check_mixer_counts(m);
  CHECK(m.is_linear_attention_layer(0));
  CHECK_FALSE(m.is_linear_attention_layer(3));
  CHECK(m.attention_output_gate);
  const ParamCounts c = count_params(m);
  CHECK(c.linear_attention_layers == 36);
  // One Qwen3NextGatedDeltaNet: in_proj_qkvz 2048 x 12288, in_proj_ba 2048 x 64, conv1d
  // 8192 x 4, dt_bias and A_log 32 each, norm 128, out_proj 4096 x 2048.
  CHECK(c.linear_attention == 33'718'464.0);
  // One gated attention: q_proj 2048 x 8192, k/v 2048 x 512 each, o_proj 4096 x 2048, QK-norm.
  CHECK(c.layer.attention == 27'263'488.0);
}

TEST_CASE("hybrid layer patterns the model cannot lay out are refused by name") {
  const std::string dir = test::make_temp_dir();
  std::ifstream in(std::string(SHARDPLAN_TEST_DATA) + "/hf/qwen3-next-80b-a3b/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 48; ++i)
    j["layer_types"].push_back(i % 2 ? "full_attention" : "linear_attention");
  test::write_file(dir + "/config.json", j.dump());
  CHECK_THROWS_WITH_AS(load_model(dir + "/config.json"), doctest::Contains("layer_types"),
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
  // DeepSeek-V2-Lite's config.json at 604d5664 (tests/data/hf): YaRN x40 from 4096 with
  // mscale_all_dim 0.707, greedy softmax top-6, aux alpha 0.001; the preset copies it.
  const ModelSpec lite = load_model(base + "deepseek-v2-lite/config.json");
  const ModelSpec lite_preset = load_model("deepseek-v2-lite");
  for (const ModelSpec* m : {&lite, &lite_preset}) {
    CHECK(m->rope.scaling == RopeScaling::yarn);
    CHECK(m->rope.factor == 40);
    CHECK(m->rope.original_positions == 4096);
    CHECK(m->rope.mscale_all_dim == 0.707);
    CHECK(m->norm_epsilon == 1e-6);
    CHECK(m->router.score == RouterScore::softmax);
    CHECK(m->router.aux_loss_coeff == 0.001);
    CHECK(m->experts == 64);
    CHECK(m->experts_per_token == 6);
  }
  CHECK(count_params(lite_preset).total == count_params(lite).total);
}

TEST_CASE("a MoE preset's model_type is its config.json's, as transformers names the family") {
  // The text backbone's type for Llama 4 (config.json's text_config.model_type).
  const std::pair<const char*, const char*> presets[] = {
      {"mixtral-8x7b", "mixtral"},          {"qwen3-30b-a3b", "qwen3_moe"},
      {"qwen3-235b-a22b", "qwen3_moe"},     {"deepseek-v3", "deepseek_v3"},
      {"deepseek-v2-lite", "deepseek_v2"},  {"llama-4-scout", "llama4_text"},
      {"llama-4-maverick", "llama4_text"},  {"gpt-oss-120b", "gpt_oss"},
      {"qwen3-next-80b-a3b", "qwen3_next"}, {"nemotron-3-nano-30b-a3b", "nemotron_h"},
      {"minimax-text-01", "minimax"}};
  for (const auto& preset : presets) {
    const std::string name = preset.first, type = preset.second;
    CAPTURE(name);
    const ModelSpec hf =
        load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/" + name + "/config.json");
    CHECK(hf.model_type == type);
    CHECK(load_model(name).model_type == type);
  }
}

TEST_CASE("Mamba-1 hybrids are refused by name, not guessed") {
  // Jamba's Mamba-1 mixer has no op list here.
  for (const char* type : {"jamba"}) {
    CAPTURE(type);
    const std::string text = std::string(R"({"model_type": ")") + type +
                             R"(", "hidden_size": 4096, "num_hidden_layers": 8,
        "num_attention_heads": 32, "intermediate_size": 8192, "vocab_size": 32000})";
    CHECK_THROWS_WITH_AS(model_from_hf_config(text, "x/config.json"),
                         doctest::Contains((std::string("'") + type + "'").c_str()), InputError);
  }
}

TEST_CASE("Nemotron-H: one block per layer, Mamba-2 mixers by hybrid_override_pattern") {
  const std::string base = std::string(SHARDPLAN_TEST_DATA) + "/hf/";
  const ModelSpec m = load_model(base + "nemotron-nano-9b-v2/config.json");
  CHECK(m.mixer_layer_count(MixerKind::mamba2) == 27);
  CHECK(m.mixer_layer_count(MixerKind::attention) == 4);
  CHECK(m.mixer_of(0) == MixerKind::mamba2);
  CHECK(m.ffn_of(1) == FfnKind::mlp);
  CHECK(m.mixer_of(1) == MixerKind::none);
  CHECK(m.mixer_layer_count(MixerKind::none) == 25);  // 56 blocks: MLP blocks have no mixer
  check_mixer_counts(m);
  CHECK(m.positions == PositionKind::none);  // NemotronHAttention applies no RoPE
  CHECK(m.mlp == MlpKind::squared_relu);
  const ParamCounts c = count_params(m);
  CHECK(c.mamba_layers == 27);
  // One NemotronHMamba2Mixer of 128 heads x 80, 8 groups of state 128: in_proj 4480 x
  // (2 x 10,240 + 2 x 1,024 + 128), conv1d 12,288 x 4 with bias, dt_bias / A_log / D, the gated
  // norm's 10,240 and out_proj 10,240 x 4480.
  CHECK(c.mamba == 147'446'144.0);
  // The MoE blocks of Nemotron 3 Nano: 128 experts of 1,856 (up and down, squared ReLU), a
  // shared expert of 3,712, a sigmoid router with its correction bias.
  const ModelSpec nano = load_model(base + "nemotron-3-nano-30b-a3b/config.json");
  CHECK(nano.moe_layer_count() == 23);
  CHECK(nano.experts == 128);
  CHECK(nano.experts_per_token == 6);
  CHECK(nano.shared_ffn_hidden == 3712);
  CHECK(nano.router.score == RouterScore::sigmoid);
  CHECK(nano.router_bias);
}

TEST_CASE("a nemotron_h config without a usable pattern names the field") {
  const std::string text = R"({"model_type": "nemotron_h", "hidden_size": 4096,
      "num_hidden_layers": 4, "num_attention_heads": 32, "intermediate_size": 8192,
      "vocab_size": 32000, "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128,
      "n_groups": 8, "hybrid_override_pattern": "M-M"})";
  CHECK_THROWS_WITH_AS(model_from_hf_config(text, "x/config.json"),
                       doctest::Contains("hybrid_override_pattern"), InputError);
  nlohmann::json j = nlohmann::json::parse(text);
  j["hybrid_override_pattern"] = "M-X-";
  CHECK_THROWS_WITH_AS(model_from_hf_config(j.dump(), "x/config.json"),
                       doctest::Contains("block_pattern"), InputError);
}

TEST_CASE("MiniMax-01: seven lightning attention layers to one softmax layer") {
  const ModelSpec m =
      load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/minimax-text-01/config.json");
  CHECK(m.linear.mixer == MixerKind::lightning);
  CHECK(m.full_attention_every == 8);
  CHECK(m.mixer_layer_count(MixerKind::lightning) == 70);
  CHECK(m.mixer_of(7) == MixerKind::attention);
  CHECK(m.mixer_layer_count(MixerKind::attention) == 10);
  CHECK(m.mixer_layer_count(MixerKind::gated_deltanet) == 0);
  check_mixer_counts(m);
  CHECK(m.linear.lightning_block == 256);
  const ParamCounts c = count_params(m);
  // One MiniMaxLightningAttention: qkv_proj 6144 x 24576, output_gate 6144 x 8192, out_proj
  // 8192 x 6144 and the RMSNorm over 8192.
  CHECK(c.linear_attention == 251'666'432.0);
  // The card's 45.9B activated are the parameters a token touches in its 80 layers: two experts
  // of 32 and the router in each, the attention and the two norms.
  CHECK(c.active - c.embedding - c.lm_head - c.final_norm == 45'944'913'920.0);
  // A softmax layer every 8th: any other order is refused by name.
  std::ifstream in(std::string(SHARDPLAN_TEST_DATA) + "/hf/minimax-text-01/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["layer_types"][0] = "full_attention";
  CHECK_THROWS_WITH_AS(model_from_hf_config(j.dump(), "x/config.json"),
                       doctest::Contains("layer_types"), InputError);
}

TEST_CASE("a model file's linear_mixer is a linear mixer") {
  // mamba2 is a mixer name, but not one a linear (full_attention_every) layer runs.
  std::ifstream in(std::string(SHARDPLAN_SOURCE_DIR) + "/profiles/models/minimax-text-01.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["linear_mixer"] = "mamba2";
  const std::string dir = test::make_temp_dir();
  test::write_file(dir + "/model.json", j.dump());
  CHECK_THROWS_WITH_AS(load_model(dir + "/model.json"),
                       doctest::Contains("linear_mixer: linear layers are gated-deltanet or "
                                         "lightning"),
                       InputError);
}

TEST_CASE("Mistral windows every layer when its config sets sliding_window; Mixtral does not") {
  // Mistral-7B-v0.1 config.json: sliding_window 4096 (arXiv:2310.06825 Table 1 window_size 4096),
  // the preset's own; Mixtral-8x7B's config.json: sliding_window null.
  const ModelSpec m = load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/mistral-7b/config.json");
  CHECK(m.sliding_window == 4096);
  CHECK(m.global_attention_every == 0);
  CHECK(load_model("mistral-7b").sliding_window == 4096);
  const ModelSpec x = load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/mixtral-8x7b/config.json");
  CHECK(x.sliding_window == 0);
}
