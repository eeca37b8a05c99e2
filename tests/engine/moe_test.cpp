// Mixture-of-experts and latent-attention models: counts against the published totals, and how
// expert parallelism, expert tensor parallelism and top-k shape memory.
#include <doctest/doctest.h>

#include "shardplan/layer.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

TEST_CASE("MoE totals within 0.5% of the published figures, active counts by each one's rule") {
  struct Published {
    const char* model;
    double total;
  };
  // DeepSeek-V3 report (arXiv:2412.19437) abstract: 671B, MTP module excluded; Qwen3 model
  // cards: 30.5B and 235B; Mixtral paper (arXiv:2401.04088): 46.7B.
  const Published published[] = {{"deepseek-v3", 671e9},
                                 {"qwen3-30b-a3b", 30.5e9},
                                 {"qwen3-235b-a22b", 235e9},
                                 {"mixtral-8x7b", 46.7e9}};
  for (const Published& p : published) {
    CAPTURE(p.model);
    CHECK(test::rel_err(count_params(load_model(p.model)).total, p.total) < 0.005);
  }
  // Active counts. DeepSeek's weight notes (README_WEIGHTS.md of deepseek-ai/DeepSeek-V3):
  // 36.6B activated, the 0.9B output head included and the input embedding (a row lookup) not.
  const ParamCounts ds = count_params(load_model("deepseek-v3"));
  CHECK(test::rel_err(ds.active - ds.embedding, 36.6e9) < 0.005);
  // Mixtral paper: 12.9B active, embedding and head both counted (as `active` counts).
  CHECK(test::rel_err(count_params(load_model("mixtral-8x7b")).active, 12.9e9) < 0.005);
  // Qwen3 model cards truncate to the label's last digit: 3.35B is "3.3B", 22.19B is "22B".
  const double qwen30 = count_params(load_model("qwen3-30b-a3b")).active;
  const double qwen235 = count_params(load_model("qwen3-235b-a22b")).active;
  CHECK(qwen30 >= 3.3e9);
  CHECK(qwen30 < 3.4e9);
  CHECK(qwen235 >= 22e9);
  CHECK(qwen235 < 23e9);
}

TEST_CASE("DeepSeek-V3: 3 dense layers, 58 MoE layers, MLA, the MTP module apart") {
  const ModelSpec m = load_model("deepseek-v3");
  const ParamCounts c = count_params(m);
  CHECK(c.dense_layers == 3);
  CHECK(c.moe_layers == 58);
  // MLA attention of one layer: q down 7168x1536 + q up 1536x(128x192) + kv down 7168x576 +
  // kv up 512x(128x256) + out (128x128)x7168 + the two latent norms (1536 + 512).
  CHECK(c.layer.attention == 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 +
                                 128.0 * 128 * 7168 + 1536 + 512);
  // The model card's 685B on the Hub = 671B + 14B of MTP weights (11.5B unique, plus the
  // shared embedding and head it stores again): the module's own weights are ~11.6B.
  CHECK(c.mtp > 11.4e9);
  CHECK(c.mtp < 11.8e9);
  CHECK(c.total + c.mtp < 685e9);
}

TEST_CASE("Gemma 2 9B counts exactly with four norms per layer") {
  // Hugging Face safetensors metadata (total) of google/gemma-2-9b.
  CHECK(count_params(load_model("gemma-2-9b")).total == 9'241'705'984.0);
}

TEST_CASE("Llama 4: shared expert on every MoE layer, Maverick's dense layers in between") {
  // Meta's announcement: 17B active for both; totals include the vision encoder (not modelled).
  const ParamCounts scout = count_params(load_model("llama-4-scout"));
  const ParamCounts maverick = count_params(load_model("llama-4-maverick"));
  CHECK(test::rel_err(scout.active, 17e9) < 0.02);
  CHECK(test::rel_err(maverick.active, 17e9) < 0.02);
  CHECK(maverick.moe_layers == 24);
  CHECK(maverick.dense_layers == 24);
  CHECK(test::rel_err(scout.total, 109e9) < 0.02);
  CHECK(test::rel_err(maverick.total, 400e9) < 0.01);
}

TEST_CASE("expert weights divide by ep, not by tp; dense weights by tp") {
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const ParallelPlan base = test::plan(8, 1, 1);
  ParallelPlan ep8 = base;
  ep8.ep = 8;
  ParallelPlan tp8 = test::plan(1, 8, 1);
  tp8.etp = 1;  // experts whole on each rank: only ep would split them
  const DeviceParams one = device_params(m, base, 0);
  CHECK(device_params(m, ep8, 0).experts == doctest::Approx(one.experts / 8).epsilon(1e-12));
  CHECK(device_params(m, ep8, 0).dense == one.dense);
  CHECK(device_params(m, tp8, 0).experts == one.experts);
  CHECK(device_params(m, tp8, 0).dense < one.dense / 7);
  // Expert tp splits each expert's matrices on top of ep.
  ParallelPlan folded = test::plan(1, 8, 1);
  folded.ep = 8;
  folded.etp = 1;
  CHECK(device_params(m, folded, 0).experts == doctest::Approx(one.experts / 8).epsilon(1e-12));
}

TEST_CASE("MoE activations grow with top-k, and a capacity factor pads them") {
  ModelSpec m = load_model("qwen3-30b-a3b");
  const TrainingSpec tr = test::training(4096, 8);
  const ParallelPlan p = test::plan(1, 1, 1);
  auto saved = [&](const ModelSpec& model, const TrainingSpec& t) {
    return saved_activation_bytes(describe_micro_batch(model, t, p).layer, Recompute::none);
  };
  const double top8 = saved(m, tr);
  m.experts_per_token = 2;
  const double top2 = saved(m, tr);
  m.experts_per_token = 4;
  const double top4 = saved(m, tr);
  CHECK(top2 < top4);
  CHECK(top4 < top8);
  // Each extra visit saves the dispatched token copy (h) and the expert's gated intermediate
  // (3 x 768 wide: gate and up outputs and the product it feeds down) at 2 bytes a value.
  const double per_visit = 4096.0 * (2048 + 2048 + 3 * 768) * 2;
  CHECK(top4 - top2 == doctest::Approx(2 * per_visit).epsilon(1e-9));
  TrainingSpec padded = tr;
  padded.moe_capacity_factor = 1.25;
  m.experts_per_token = 8;
  CHECK(saved(m, padded) > top8);
}

TEST_CASE("MLA attention: qk and v head widths differ, the latent down projections replicate") {
  const ModelSpec m = load_model("deepseek-v3");
  const ParallelPlan tp8 = test::plan(1, 8, 1);
  const ParallelPlan tp1 = test::plan(1, 1, 1);
  // Stage 0 of a one-stage plan holds all layers; dense + expert weights under tp.
  const double per_rank = device_params(m, tp8, 0).dense;
  const double whole = device_params(m, tp1, 0).dense;
  // Down projections (7168 x 1536 + 7168 x 576 and two norms) stay whole on every rank.
  const double replicated_attention = 7168.0 * 1536 + 7168.0 * 576 + 1536 + 512;
  CHECK(per_rank > whole / 8);
  CHECK(per_rank * 8 - whole > 7 * 61 * replicated_attention);
}
