// DeepSeek-V3's multi-token-prediction module as a plan carries it: its weights, its compute,
// its activations and its FSDP unit on the LM head's stage, its weights in the checkpoint, and
// the search's layout that makes that stage lighter. Hand computations from DeepSeek-V3's
// config.json (hidden 7168, vocab 129280, 256 routed experts of 3 x 7168 x 2048, one MTP
// module) and the report's Sec. 2.2.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "shardplan/layer.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/runbook.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_time.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

constexpr double kHidden = 7168, kVocab = 129280, kTokens = 4096;
// One MoE layer's routed experts: 256 x (gate, up, down) of 7168 x 2048.
constexpr double kRoutedExperts = 256.0 * 3.0 * 7168.0 * 2048.0;

ModelSpec without_mtp(ModelSpec m) {
  m.mtp_layers = 0;
  return m;
}

}  // namespace

TEST_CASE("DeepSeek-V3's MTP module: its weights on the LM head's stage, experts split by ep") {
  const ModelSpec m = load_model("deepseek-v3");
  REQUIRE(m.mtp_layers == 1);
  const ModelSpec none = without_mtp(m);
  const double mtp = count_params(m).mtp;
  ParallelPlan p = test::plan(8, 1, 2);
  // No tensor or expert parallelism: the last stage holds the whole module, the first none.
  CHECK(device_params(m, p, 1).total() - device_params(none, p, 1).total() ==
        doctest::Approx(mtp));
  CHECK(device_params(m, p, 0).total() == device_params(none, p, 0).total());
  // EP 8: each rank holds 32 of the module's 256 routed experts.
  p.ep = 8;
  CHECK(device_params(m, p, 1).total() - device_params(none, p, 1).total() ==
        doctest::Approx(mtp - kRoutedExperts * 7.0 / 8.0));
}

TEST_CASE("DeepSeek-V3's MTP module: one more MoE layer, a 2h -> h projection and the head again") {
  const ModelSpec m = load_model("deepseek-v3");
  const TrainingSpec t = test::training(4096, 16);
  const ParallelPlan p = test::plan(8, 1, 2);
  const MicroBatchWork w = describe_micro_batch(m, t, p);
  REQUIRE(w.mtp_layers == 1);
  double gemm_flops = 0;
  for (const Op& op : w.mtp.ops) gemm_flops += op.kind == OpKind::gemm ? op.flops : 0.0;
  // Projection 2 x T x h x 2h, LM head 2 x T x h x V (DeepSeek-V3 Eq. 21-22).
  CHECK(gemm_flops == doctest::Approx(2.0 * kTokens * kHidden * 2.0 * kHidden +
                                      2.0 * kTokens * kHidden * kVocab));
  // The LM head's stage runs the module's layer and block beside its own work; the other
  // stage is untouched. No TP, CP or EP traffic here, so the passes are the compute alone.
  const ClusterSpec c = test::cluster(16, "dgx-h100");
  const Estimate with = estimate(m, t, p, c, Simulation::skip);
  const Estimate without = estimate(without_mtp(m), t, p, c, Simulation::skip);
  const MicroBatchCost cost = micro_batch_cost(m, t, p, c);
  const double speed = t.framework.pricing.compute_speed(c.gpu.accuracy_class, p.pp);
  CHECK(with.time.last_work.forward_s - without.time.last_work.forward_s ==
        doctest::Approx((cost.layer.forward_s + cost.mtp.forward_s) / speed));
  CHECK(with.time.first_work.forward_s == doctest::Approx(without.time.first_work.forward_s));
  CHECK(cost.mtp.forward_s > cost.head.forward_s);
}

TEST_CASE("DeepSeek-V3's MTP module: its activations, its FSDP unit and its checkpoint share") {
  const ModelSpec m = load_model("deepseek-v3");
  const ModelSpec none = without_mtp(m);
  const TrainingSpec t = test::training(4096, 16);
  ParallelPlan p = test::plan(8, 1, 2);
  const ClusterSpec c = test::cluster(16, "dgx-h100");
  // 1F1B's last stage holds one micro-batch in flight: one more MoE layer's saved tensors and
  // the module's own: two norms' inputs (T h each), the projection's 2h input, the head's norm
  // and input (T h each) in bf16, and the loss's fp32 softmax (T V x 4 B).
  const MemoryInputs in = memory_inputs(m, t, p);
  const double own = 2.0 * kTokens * kHidden * (1 + 1 + 2 + 1 + 1) + kTokens * kVocab * 4.0;
  CHECK(in.activations.mtp_saved == doctest::Approx(own));
  const double with = estimate_memory(m, t, p, c).stages[1].activations_bytes;
  const double without = estimate_memory(none, t, p, c).stages[1].activations_bytes;
  CHECK(with - without == doctest::Approx(in.activations.layer_saved[0] + own));
  // Under ZeRO-3 the module is one more unit on the last stage: 31 layers, the head, the module.
  p.zero = 3;
  const Estimate z3 = estimate(m, t, p, c, Simulation::skip);
  CHECK(z3.time.last_work.zero3_units == 33);
  CHECK(z3.time.first_work.zero3_units == 31);  // 30 layers and the embedding
  // The checkpoint saves the module with the model: 671B + 11.6B parameters.
  const Runbook r = plan_runbook(m, t, p, c, z3, RunbookOptions{});
  CHECK(r.checkpoint.params == doctest::Approx(count_params(m).total + count_params(m).mtp));
}

TEST_CASE("the search's lighter ends weigh an MTP module as two layers on the last chunk") {
  // 61 layers on 16 chunks: middles of k = (61 + 2 + 2) / 16 = 4, the last 4 - 1 - 2 = 1 layer
  // beside the module and the loss, the first the other 4 - the layout Megatron-Bridge's
  // deepseek_v3.py sets for (PP, VP) = (16, 1) and (4, 4): Et*4|(t*4|)*14tmL.
  ParallelPlan p = test::plan(1, 1, 16);
  set_lighter_ends(61, 16, p, 1);
  CHECK(p.first_stage_layers == 4);
  CHECK(p.last_stage_layers == 1);
  CHECK(layout_splits(61, p));
  CHECK(chunk_layers(61, p, 7) == 4);
  // Without the module, 61 + 2 does not split into 16 equal chunks: no such layout.
  ParallelPlan q = test::plan(1, 1, 16);
  set_lighter_ends(61, 16, q);
  CHECK(q.first_stage_layers == 62);
}

TEST_CASE("the step's middle stage is where DeepSeek-V3's experts are, not its dense second stage") {
  // pp 32 with one layer on the first stage and none beside the MTP module on the last: stage 1
  // holds layers 1-2, both dense (first_k_dense_replace 3), stage 2 the first two MoE layers.
  // The middle stage the step is priced on must send the experts' all-to-alls.
  const ModelSpec m = load_model("deepseek-v3");
  ParallelPlan p = test::plan(32, 2, 32);
  p.ep = 8;
  p.zero = 1;
  p.recompute = Recompute::full;
  p.first_stage_layers = 1;
  p.last_stage_layers = 0;
  REQUIRE(stage_moe_layers(m, p, 1) == 0);
  REQUIRE(stage_moe_layers(m, p, 2) == 2);
  CHECK(heaviest_moe_stage(m, p) == 2);
  const Estimate e = estimate(m, test::training(4096, 15360), p,
                              test::cluster(2048, "h800-deepseek"), Simulation::skip);
  CHECK(e.time.middle_work.layers == 2);
  CHECK(e.time.middle_work.ep_forward_s > 0);
  CHECK(e.time.middle_work.ep_backward_s > 0);
}

TEST_CASE("interleaved, a device's MoE layers are counted over its chunks, not one run of layers") {
  // DeepSeek-V3 as Megatron-Bridge ran it on H100s: pp 8 x 4 virtual stages, layout
  // Et|(tt|)*30mL: layer 0 alone in chunk 0, then 30 chunks of two, nothing beside the MTP
  // module in the last. Device d runs chunks d, d + 8, d + 16, d + 24; layers 0-2 are dense.
  const ModelSpec m = load_model("deepseek-v3");
  ParallelPlan p = test::plan(64, 2, 8);
  p.interleave = 4;
  p.first_stage_layers = 1;
  p.last_stage_layers = 0;
  REQUIRE(layout_splits(61, p));
  // Device 0: layer 0 (dense), 15-16, 31-32, 47-48: 6 MoE of 7 layers (counted as one run,
  // layers 0-6, it had 4).
  CHECK(stage_layers(61, p, 0) == 7);
  CHECK(stage_moe_layers(m, p, 0) == 6);
  // Device 1: layers 1-2 (dense), 17-18, 33-34, 49-50: 6 of 8 (as layers 7-14, 8 of 8, which
  // made it the heaviest MoE stage).
  CHECK(stage_moe_layers(m, p, 1) == 6);
  // Device 2: layers 3-4, 19-20, 35-36, 51-52: all 8 MoE, the heaviest.
  CHECK(stage_moe_layers(m, p, 2) == 8);
  // Device 7: layers 13-14, 29-30, 45-46 and the empty last chunk: 6 of 6.
  CHECK(stage_layers(61, p, 7) == 6);
  CHECK(stage_moe_layers(m, p, 7) == 6);
  CHECK(heaviest_moe_stage(m, p) == 2);
  int chunks = 0, layers = 0;
  for_each_stage_chunk(61, p, 2, [&](int first, int n) {
    CHECK(first == 3 + 16 * chunks);
    ++chunks;
    layers += n;
  });
  CHECK(chunks == 4);
  CHECK(layers == 8);
}

TEST_CASE("a device's chunks are its runs of layers in model order, for every layout") {
  // Against the definition: walk every virtual stage in model order and keep those chunk_device
  // puts on the device. DeepSeek-V3's dense first layers count in closed form as layer by layer.
  const ModelSpec m = load_model("deepseek-v3");
  int plans = 0;
  for (int pp : {2, 4, 8}) {
    for (int v : {1, 2, 4}) {
      for (int first : {-1, 0, 1, 3}) {
        for (int last : {-1, 0, 1}) {
          for (Schedule schedule : {Schedule::one_f_one_b, Schedule::interleaved, Schedule::zb_v}) {
            ParallelPlan p = test::plan(1, 1, pp);
            p.interleave = v;
            p.first_stage_layers = first;
            p.last_stage_layers = last;
            p.schedule = schedule;
            if (!layout_splits(m.layers, p)) continue;
            ++plans;
            for (int stage = 0; stage < pp; ++stage) {
              std::vector<std::pair<int, int>> expected, got;
              int start = 0, moe = 0;
              for (int c = 0; c < pp * v; ++c) {
                const int n = chunk_layers(m.layers, p, c);
                if (chunk_device(p, c) == stage) {
                  expected.emplace_back(start, n);
                  for (int i = start; i < start + n; ++i) moe += m.is_moe_layer(i) ? 1 : 0;
                }
                start += n;
              }
              for_each_stage_chunk(m.layers, p, stage,
                                   [&](int at, int n) { got.emplace_back(at, n); });
              CAPTURE(pp);
              CAPTURE(v);
              CAPTURE(first);
              CAPTURE(last);
              CAPTURE(stage);
              CHECK(got == expected);
              CHECK(stage_moe_layers(m, p, stage) == moe);
            }
          }
        }
      }
    }
  }
  CHECK(plans > 20);
}
