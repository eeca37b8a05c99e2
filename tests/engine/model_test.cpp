// Exact parameter counts from architecture, checked against published totals.
#include "shardplan/model.hpp"

#include <doctest/doctest.h>

#include <string>

#include "shardplan/layer.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/search.hpp"
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
  // Qwen3 dense (q_norm / k_norm over head_dim included); 4B ties its embeddings.
  CHECK(count_params(load_model("qwen3-4b")).total == 4'022'468'096.0);
  CHECK(count_params(load_model("qwen3-8b")).total == 8'190'735'360.0);
  CHECK(count_params(load_model("qwen3-14b")).total == 14'768'307'200.0);
  CHECK(count_params(load_model("qwen3-32b")).total == 32'762'123'264.0);
  CHECK(count_params(load_model("deepseek-v2-lite")).total == 15'706'484'224.0);
}

TEST_CASE("Qwen3 0.6B and 1.7B: the tied embedding counted once") {
  // Their safetensors metadata (751,632,384 and 2,031,739,904) also counts the lm_head copy the
  // checkpoint stores though tie_word_embeddings is true: 151,936 x hidden more than the model.
  CHECK(count_params(load_model("qwen3-0.6b")).total == 751'632'384.0 - 151'936.0 * 1024);
  CHECK(count_params(load_model("qwen3-1.7b")).total == 2'031'739'904.0 - 151'936.0 * 2048);
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
  const double l = 96, h = 12288, vocab = 51200, s = 2048;
  const double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (vocab + s) / (12 * l * h));
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

namespace {
ModelSpec qwen3_next() {
  return load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/qwen3-next-80b-a3b/config.json");
}
}  // namespace

TEST_CASE("a hybrid's stages hold its gated DeltaNet layers where they are") {
  // Layers 4k+3 are softmax attention, the rest gated DeltaNet (full_attention_interval 4):
  // without tensor parallelism the stages add up to the whole model, embedding on the first
  // and the untied head on the last.
  const ModelSpec m = qwen3_next();
  const ParamCounts c = count_params(m);
  const ParallelPlan p = test::plan(1, 1, 4);
  double sum = 0;
  for (int stage = 0; stage < 4; ++stage) sum += device_params(m, p, stage).total();
  CHECK(sum == c.total);
  // The first stage: the embedding and 12 MoE layers, 9 of them with a gated DeltaNet.
  CHECK(device_params(m, p, 0).total() ==
        c.embedding + 12 * c.layer.total() + 9 * (c.linear_attention - c.layer.attention));
}

TEST_CASE("a hybrid's layer runs each mixer for its share of the layers") {
  // Qwen3-Next at 4,096 tokens, micro-batch 1, tp 1: the delta rule's forward FLOPs are, per
  // token and value head, 2 x (3 dk dv + 64/2 (dk + dv)) = 2 x (49,152 + 8,192), over 32 value
  // heads and 4,096 tokens, for 36 of the 48 layers.
  const ModelSpec m = qwen3_next();
  const TrainingSpec tr = test::training(4096, 8);
  const MicroBatchWork w = describe_micro_batch(m, tr, test::plan(8, 1, 1));
  double rule = -1, flash = -1;
  for (const Op& op : w.layer.ops) {
    if (std::string(op.name) == "gated delta rule") rule = op.flops;
    if (std::string(op.name) == "flash attention") flash = op.flops;
  }
  CHECK(rule == doctest::Approx(2.0 * (49'152 + 8'192) * 32 * 4096 * 36.0 / 48));
  // Softmax attention only in 12 of 48 layers: causal half of 4 x s^2 x heads x head_dim.
  CHECK(flash == doctest::Approx(0.5 * 2.0 * 16 * 4096.0 * 4096 * 512 * 12.0 / 48));
  // Model FLOPs count query-key pairs of the 12 softmax layers only.
  CHECK(attended_pairs(m, 4096) == 12 * 4096.0 * 4096);
}

TEST_CASE("a block-pattern model's stages hold its blocks where the pattern puts them") {
  // Nemotron-H-8B in 4 stages of 13 blocks: the first is "M-M-M-M*-M-M-", 6 Mamba-2, 1
  // attention and 6 MLP blocks, each with its one RMSNorm, and the embedding.
  const ModelSpec m = load_model("nemotron-h-8b");
  const ParamCounts c = count_params(m);
  const ParallelPlan p = test::plan(1, 1, 4);
  double sum = 0;
  for (int stage = 0; stage < 4; ++stage) sum += device_params(m, p, stage).total();
  CHECK(sum == c.total);
  const double norm = 4096;
  CHECK(device_params(m, p, 0).total() == c.embedding + 6 * (c.mamba + norm) +
                                              (c.layer.attention + norm) + 6 * (c.layer.mlp + norm));
  // The largest block, what a ZeRO-3 gather brings in at once, is the 4096 x 21504 MLP.
  CHECK(c.largest_layer == 2.0 * 4096 * 21504 + norm);
}

TEST_CASE("a Mamba-2 block runs its SSD scan for its share of the blocks") {
  // Nemotron Nano 2 9B at 4,096 tokens: per token the scan does 128 heads x (2 x 128 x 80 +
  // 128 x 80) plus 8 groups x 128 x 128 multiply-adds (Dao & Gu 2024 Sec. 6, chunk 128), in 27
  // of the 56 blocks; attention runs in 4 of them, causal, without RoPE.
  const ModelSpec m = load_model("nemotron-nano-9b-v2");
  const TrainingSpec tr = test::training(4096, 8);
  ParallelPlan p = test::plan(4, 2, 1);
  p.sequence_parallel = true;
  const MicroBatchWork w = describe_micro_batch(m, tr, p);
  double scan = -1, flash = -1;
  bool rotary = false;
  for (const Op& op : w.layer.ops) {
    if (std::string(op.name) == "ssd scan") scan = op.flops;
    if (std::string(op.name) == "flash attention") flash = op.flops;
    rotary = rotary || std::string(op.name) == "rotary embedding";
  }
  // Heads and groups split over tp 2.
  const double per_token = 64 * (2.0 * 128 * 80 + 128 * 80) + 4 * 128 * 128;
  CHECK(scan == doctest::Approx(2.0 * 4096 * per_token * 27 / 56));
  CHECK(flash == doctest::Approx(0.5 * 2.0 * 20 * 4096.0 * 4096 * 256 * 4 / 56));
  CHECK_FALSE(rotary);
  // One block, one row-parallel end: one sequence-parallel gather and scatter per layer.
  CHECK(w.layer.tp.gathers == 1);
  CHECK(w.layer.tp.scatters == 1);
}

TEST_CASE("a pattern's MoE blocks are the MoE layer, its other blocks the dense one") {
  const ModelSpec m = load_model("nemotron-3-nano-30b-a3b");
  const MicroBatchWork w = describe_micro_batch(m, test::training(4096, 8), test::plan(8, 1, 1));
  CHECK(w.moe_layers == 23);
  CHECK(w.dense_layers == 29);
  auto has = [](const Block& b, const char* name) {
    for (const Op& op : b.ops)
      if (std::string(op.name) == name) return true;
    return false;
  };
  CHECK(has(w.layer, "router"));
  CHECK_FALSE(has(w.layer, "ssd scan"));
  CHECK(has(w.dense_layer, "ssd scan"));
  CHECK(has(w.dense_layer, "flash attention"));
  CHECK_FALSE(has(w.dense_layer, "mlp up projection"));  // no '-' block in Nemotron 3 Nano
}

TEST_CASE("lightning attention runs its blocks and its carried state for 70 of 80 layers") {
  // MiniMax-Text-01 at 4,096 tokens, tp 8: per token and head 2 x 256 x 128 (Q K^T and its
  // product with V in the block) + 2 x 128 x 128 (Q times the state, K^T V into it)
  // multiply-adds, over 8 of the 64 heads.
  const ModelSpec m =
      load_model(std::string(SHARDPLAN_TEST_DATA) + "/hf/minimax-text-01/config.json");
  const MicroBatchWork w = describe_micro_batch(m, test::training(4096, 8), test::plan(1, 8, 1));
  double lightning = -1;
  for (const Op& op : w.layer.ops)
    if (std::string(op.name) == "lightning attention") lightning = op.flops;
  const double per_token = 8 * (2.0 * 256 * 128 + 2.0 * 128 * 128);
  CHECK(lightning == doctest::Approx(2.0 * 4096 * per_token * 70 / 80));
}

TEST_CASE(
    "the search's memo of per-stage counts answers as device_params and heaviest_moe_stage do") {
  // One memo walks plans the way the search does: several points per pipeline, then the next
  // pipeline. Each answer must equal a fresh count, including after the pipeline changes under
  // it (a stale stage would price a plan with another plan's weights).
  for (const std::string name : {"deepseek-v3", "mixtral-8x7b", "llama-3.1-70b", "nemotron-h-8b"}) {
    CAPTURE(name);
    const ModelSpec m = load_model(name);
    StageParamsMemo memo(m);
    int asked = 0, uneven = 0;
    for (int pp : {1, 2, 4, 8}) {
      for (int v : {1, 2}) {
        for (Schedule s : {Schedule::one_f_one_b, Schedule::zb_v}) {
          for (int tp : {1, 2}) {
            for (int ep : {1, 8}) {
              ParallelPlan p;
              p.tp = tp, p.pp = pp, p.ep = m.is_moe() ? ep : 1, p.interleave = v, p.schedule = s;
              if (pp * v > m.layers) continue;
              // Even stages; the search's lighter ends (MTP modules counted); ends that take
              // what k layers per middle chunk leave.
              for (int layout : {0, 1, 2}) {
                const int chunks = pp * v;
                p.first_stage_layers = p.last_stage_layers = -1;
                if (layout == 1 && pp > 1) set_lighter_ends(m.layers, chunks, p, m.mtp_layers);
                if (layout == 2 && pp > 1) {
                  const int ends = m.layers - (m.layers / chunks) * (chunks - 2);
                  p.first_stage_layers = ends / 2;
                  p.last_stage_layers = ends - ends / 2;
                }
                // A layout the search refuses (rule stage_layout) never reaches the count.
                if (!layout_splits(m.layers, p)) continue;
                if (p.first_stage_layers >= 0) ++uneven;
                for (int zero : {0, 3}) {  // points of one pipeline: fields the count does not read
                  p.zero = zero;
                  for (int stage : {0, pp - 1, pp / 2, 0}) {
                    const DeviceParams want = device_params(m, p, stage);
                    const DeviceParams got = memo.of(p, stage);
                    CHECK(got.dense == want.dense);
                    CHECK(got.experts == want.experts);
                    CHECK(got.largest_layer == want.largest_layer);
                    CHECK(memo.heaviest_moe_stage(p) == heaviest_moe_stage(m, p));
                    ++asked;
                  }
                }
              }
            }
          }
        }
      }
    }
    CHECK(asked > 100);
    CHECK(uneven >= 8);
  }
}
