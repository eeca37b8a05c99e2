// Memory model against its sources: 16 B/param mixed-precision Adam, the ZeRO paper, Korthikanti et
// al. 2022.
#include "shardplan/memory.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "shardplan/layer.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

double model_states(const StageMemory& s) {
  return s.model_states_bytes();
}

}  // namespace

TEST_CASE("7B with mixed-precision Adam needs 112e9 bytes = 104.3 GiB, more than an 80 GB card") {
  // 2 (bf16 weights) + 2 (bf16 grads) + 12 (fp32 master, momentum, variance) = 16 B/param
  // (Rajbhandari et al. 2020, ZeRO, section 3.1); 7e9 x 16 = 112e9 B = 104.3 GiB.
  ClusterOptions o;
  o.gpu = "H100-SXM";
  o.gpus = 1;
  const ClusterSpec c = build_cluster(o);
  const MemoryBreakdown m =
      estimate_memory(test::params_only(7e9), test::training(4096, 1), test::plan(1, 1, 1), c);
  CHECK(model_states(m.worst()) == doctest::Approx(112e9).epsilon(1e-12));
  CHECK(model_states(m.worst()) / kGiB == doctest::Approx(104.3).epsilon(0.001));
  CHECK(m.bytes_per_param.total() == 16.0);
  CHECK_FALSE(m.fits);
  CHECK_FALSE(m.activations_known);
}

TEST_CASE("7B in pure bf16 with AdamW: 7e9 x 8 B = 56e9 bytes, half of mixed precision") {
  // 2 (bf16 weights) + 2 (bf16 grads) + 4 (bf16 momentum 2, variance 2), no fp32 master: the
  // torchtune full_finetune_distributed recipe (dtype bf16, FSDP mixed_precision=None).
  TrainingSpec t = test::training(4096, 1);
  set_precision(t, Precision::bf16_pure);
  const ModelSpec m = test::params_only(7e9);
  const StateBytes b = state_bytes_per_param(m, t);
  CHECK(b.weights == 2.0);
  CHECK(b.gradients == 2.0);
  CHECK(b.optimizer == 4.0);
  const MemoryBreakdown mem = estimate_memory(m, t, test::plan(1, 1, 1), test::cluster(1));
  CHECK(model_states(mem.worst()) == doctest::Approx(56e9).epsilon(1e-12));
  t.optimizer = OptimizerKind::sgd_momentum;
  CHECK(state_bytes_per_param(m, t).total() == 6.0);  // 2 + 2 + 2 momentum
  t.optimizer = OptimizerKind::adam_8bit;  // 8-bit states whatever the weights; no master
  CHECK(state_bytes_per_param(m, t).optimizer == doctest::Approx(2.03125));
  t.optimizer = OptimizerKind::adafactor;  // fp32 factors (transformers upcasts), no master
  const double factors = state_bytes_per_param(load_model("llama-2-7b"), t).optimizer;
  CHECK(factors > 0.0);
  CHECK(factors < 0.01);
}

TEST_CASE("ZeRO paper: 7.5B parameters on 64 GPUs, model states per device") {
  // Rajbhandari et al. 2020, Figure 1: 120 GB (baseline), 31.4 GB (P_os), 16.6 GB (P_os+g),
  // 1.9 GB (P_os+g+p) for Psi = 7.5B, N_d = 64, K = 12.
  const double expected_gb[] = {120, 31.4, 16.6, 1.9};
  for (int zero = 0; zero <= 3; ++zero) {
    ParallelPlan p = test::plan(64, 1, 1);
    p.zero = zero;
    const MemoryBreakdown m =
        estimate_memory(test::params_only(7.5e9), test::training(2048, 64), p, test::cluster(64));
    CAPTURE(zero);
    CHECK(model_states(m.worst()) / 1e9 == doctest::Approx(expected_gb[zero]).epsilon(0.02));
  }
}

TEST_CASE("Megatron-LM fp32 gradients: 18 B/param, 6 + 12/dp with the distributed optimizer") {
  // Megatron-LM docs (distributed optimizer): fp16/bf16 params + fp32 grads = 18 bytes;
  // sharding the optimizer leaves 6 + 12/d.
  TrainingSpec t = test::training(2048, 8);
  t.fp32_grads = true;
  ParallelPlan p = test::plan(8, 1, 1);
  CHECK(state_bytes_per_param(test::params_only(1e9), t).total() == 18.0);
  p.zero = 1;
  const MemoryBreakdown m = estimate_memory(test::params_only(1e9), t, p, test::cluster(8));
  CHECK(model_states(m.worst()) == doctest::Approx(1e9 * (6 + 12.0 / 8)));
}

TEST_CASE("other optimizers and precisions") {
  TrainingSpec t = test::training(2048, 1);
  const ModelSpec m = test::params_only(1e9);
  t.optimizer = OptimizerKind::sgd_momentum;
  CHECK(state_bytes_per_param(m, t).total() == 12.0);  // 2 + 2 + (4 master + 4 momentum)
  set_precision(t, Precision::fp32);
  CHECK(state_bytes_per_param(m, t).total() == 12.0);  // 4 + 4 + 4 momentum
  t.optimizer = OptimizerKind::adamw;
  CHECK(state_bytes_per_param(m, t).total() == 16.0);  // 4 + 4 + 8
  set_precision(t, Precision::bf16);
  t.optimizer = OptimizerKind::adam_8bit;
  CHECK(state_bytes_per_param(m, t).optimizer == doctest::Approx(6.03125));  // 4 + 2 + absmax
  t.optimizer = OptimizerKind::adafactor;
  const double adafactor = state_bytes_per_param(load_model("llama-2-7b"), t).optimizer;
  CHECK(adafactor > 4.0);
  CHECK(adafactor < 4.01);  // factored second moment: rows + columns only
}

TEST_CASE("Korthikanti et al. 2022 Figure 1 activations, from the per-tensor derivation") {
  // The eight analytic cases of profiles/validation/published-runs.json (Figure 1 values are
  // the paper's closed forms: transformer layers of the first pipeline stage).
  const nlohmann::json runs = nlohmann::json::parse(default_published_runs());
  int checked = 0;
  for (const auto& run : runs) {
    const std::string id = run.at("id");
    if (id.find("fig1") == std::string::npos) continue;
    const auto& mo = run.at("model");
    const auto& pl = run.at("plan");
    const ModelSpec m = test::gpt(mo.at("layers"), mo.at("hidden"), mo.at("heads"), mo.at("vocab"));
    TrainingSpec t = test::training(mo.at("seq_len"), pl.at("global_batch"));
    t.attention = AttentionKind::standard;
    ParallelPlan p = test::plan(pl.at("dp"), pl.at("tp"), pl.at("pp"), pl.at("micro_batch"));
    p.recompute = parse_recompute(pl.at("recompute"), "recompute");
    p.sequence_parallel = pl.at("sequence_parallel");
    p.interleave = pl.at("interleave").is_null() ? 1 : pl.at("interleave").get<int>();
    const MemoryBreakdown mem =
        estimate_memory(m, t, p, test::cluster(run.at("hardware").at("gpus_total")));
    const double published = run.at("measured").at("activations_gib").get<double>() * kGiB;
    CAPTURE(id);
    CHECK(test::rel_err(mem.stages[0].layer_activations_bytes, published) < 0.02);
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE("GPT layer: 34sbh + 5as^2b bytes, and its tensor/sequence-parallel forms") {
  // Korthikanti et al. 2022, Eq. 1, 2 and 4 (16-bit activations, 1-byte dropout masks).
  const ModelSpec m = test::gpt(1, 4096, 32);
  TrainingSpec t = test::training(2048, 1);
  t.attention = AttentionKind::standard;
  const double s = 2048, b = 2, h = 4096, a = 32, tp = 8;
  ParallelPlan p = test::plan(1, 1, 1, 2);
  CHECK(saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none) ==
        doctest::Approx(s * b * h * (34 + 5 * a * s / h)));
  CHECK(saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::selective) ==
        doctest::Approx(s * b * h * 34));
  p.tp = 8;
  CHECK(saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none) ==
        doctest::Approx(s * b * h * (10 + 24 / tp + 5 * a * s / (h * tp))));
  p.sequence_parallel = true;
  CHECK(saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none) ==
        doctest::Approx(s * b * h * (34 / tp + 5 * a * s / (h * tp))));
  CHECK(saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::full) ==
        doctest::Approx(2 * s * b * h / tp));
}

TEST_CASE("flash attention saves no s^2 tensors") {
  const ModelSpec m = test::gpt(1, 4096, 32);
  TrainingSpec t = test::training(8192, 1);
  ParallelPlan p = test::plan(1, 1, 1);
  t.attention = AttentionKind::flash;
  const double flash = saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none);
  // 34 sbh plus the fp32 log-sum-exp (4 bytes per token per head).
  CHECK(flash == doctest::Approx(8192.0 * 4096 * 34 + 8192.0 * 32 * 4));
}

TEST_CASE("GQA shrinks K/V activations; gated MLPs keep a third ffn-wide tensor") {
  ModelSpec m = load_model("llama-3-8b");  // 32 query heads, 8 KV heads of 128
  TrainingSpec t = test::training(4096, 1);
  const ParallelPlan p = test::plan(1, 1, 1);
  const double gqa = saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none);
  m.kv_heads = 32;
  const double mha = saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none);
  CHECK(mha - gqa == doctest::Approx(4096.0 * 2 /*K,V*/ * (32 - 8) * 128 * 2 /*bytes*/));
  m.mlp = MlpKind::gelu;
  const double plain = saved_activation_bytes(describe_micro_batch(m, t, p).layer, Recompute::none);
  CHECK(mha - plain == doctest::Approx(4096.0 * 14336 * 2));
}

TEST_CASE("1F1B keeps p micro-batches on the first stage; interleaving adds (p-1)/(p v)") {
  // Korthikanti et al. 2022 Sec. 4.2.3: first stage holds L (1 + (p-1)/(p m)) layers' worth.
  ParallelPlan p = test::plan(1, 8, 8);
  CHECK(layers_in_flight(96, p, 64, 0) == doctest::Approx(96));
  CHECK(layers_in_flight(96, p, 64, 7) == doctest::Approx(12));
  CHECK(layers_in_flight(96, p, 2, 0) == doctest::Approx(24));  // only 2 micro-batches exist
  p.interleave = 3;
  CHECK(layers_in_flight(96, p, 64, 0) == doctest::Approx(96 * (1 + 7.0 / 24)));
}

TEST_CASE("pipeline stages differ and the most loaded one is reported") {
  const ModelSpec m = load_model("llama-3.1-70b");
  ParallelPlan p = test::plan(2, 8, 4);
  p.zero = 1;
  const MemoryBreakdown mem =
      estimate_memory(m, test::training(8192, 16), p, test::cluster(64, "dgx-h100"));
  REQUIRE(mem.stages.size() == 4);
  CHECK(mem.stages[0].activations_bytes > mem.stages[3].activations_bytes);
  CHECK(mem.worst_stage == 0);
  // The last stage holds the LM head and the logits.
  CHECK(mem.stages[3].logits_bytes > 0);
  CHECK(mem.stages[0].logits_bytes == 0);
}

TEST_CASE("a MoE model whose first layers are dense peaks where its experts begin") {
  // DeepSeek-V3's first three layers are dense (first_k_dense_replace 3). On pp 32 with one
  // layer on the first stage and two on each middle stage, stage 1 holds layers 1-2 (dense) and
  // stage 2 the first two MoE layers, each with all 256 experts without EP: ~11.5B parameters
  // against ~0.6B. The search's fast peak must look there, not only at stages 0, 1 and last.
  const ModelSpec m = load_model("deepseek-v3");
  ParallelPlan p = test::plan(32, 2, 32);
  p.zero = 1;
  p.sequence_parallel = true;
  p.first_stage_layers = 1;
  p.last_stage_layers = 0;
  const TrainingSpec t = test::training(4096, 15360);
  const ClusterSpec c = test::cluster(2048, "h800-deepseek");
  const MemoryBreakdown mem = estimate_memory(m, t, p, c);
  REQUIRE(mem.stages.size() == 32);
  CHECK(mem.worst_stage == 2);
  CHECK(mem.stages[2].params > 10 * mem.stages[1].params);
  CHECK(peak_memory_bytes(m, t, p, c, memory_inputs(m, t, p)) ==
        doctest::Approx(mem.total_bytes()));
}

TEST_CASE("ZeRO-3 gathers a layer at a time") {
  const ModelSpec m = test::gpt(2, 65536, 256);
  ParallelPlan p = test::plan(64, 1, 1);
  p.zero = 3;
  const MemoryBreakdown mem =
      estimate_memory(m, test::training(2048, 64), p, test::cluster(64, "dgx-h100"));
  // One layer is 12 h^2 parameters: 51.5e9, 103 GB in bf16 (the ladder's example).
  CHECK(mem.gathered_layer_bytes / 1e9 == doctest::Approx(103.1).epsilon(0.01));
  CHECK_FALSE(mem.fits);
}

TEST_CASE("torchtitan's memory conventions: op-policy selective checkpointing, fp32 loss") {
  // Llama 3.1 8B, one micro-batch of 8192 tokens, tp 1. torchtitan's op policy keeps the block
  // input, wq (h), wv (kv), w1 (ffn), w2 (h) and SDPA's output (h) per token, in bf16:
  // 8192 x (4 x 4096 + 1024 + 14336) x 2 = 520,093,696 B per layer. Its loss holds 12 B per
  // logit (fp32 log-softmax output, its gradient and the input gradient); Megatron's 2 B.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 8);
  ParallelPlan p = test::plan(8, 1, 1);
  p.zero = 3;
  p.recompute = Recompute::selective;
  const ClusterSpec c = test::cluster(8);
  t.framework = load_framework(Framework::torchtitan);
  const StageMemory titan = estimate_memory(m, t, p, c).stages.front();
  CHECK(titan.layer_activations_bytes == doctest::Approx(32.0 * 520093696.0));
  CHECK(titan.logits_bytes == doctest::Approx(8192.0 * 128256.0 * 12.0));
  t.framework = load_framework(Framework::megatron);
  const StageMemory megatron = estimate_memory(m, t, p, c).stages.front();
  CHECK(megatron.logits_bytes == doctest::Approx(8192.0 * 128256.0 * 2.0));
  // Megatron's selective keeps more: everything but the attention core.
  CHECK(megatron.layer_activations_bytes > titan.layer_activations_bytes);
}

TEST_CASE("torchtitan's loss under TP: loss_parallel holds 16 B per vocabulary-sharded logit") {
  // PyTorch torch/distributed/tensor/parallel/loss.py: the fused backward forms
  // (zeros_like(x) + exp(x)) * grad_output beside the saved fp32 log-softmax x, so four fp32
  // copies of the local logits are alive at once; without TP the aten loss holds three.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 8);
  t.framework = load_framework(Framework::torchtitan);
  ParallelPlan p = test::plan(2, 4, 1);
  p.sequence_parallel = true;
  const StageMemory tp4 = estimate_memory(m, t, p, test::cluster(8)).stages.front();
  CHECK(tp4.logits_bytes == doctest::Approx(8192.0 * 128256.0 / 4 * 16.0));
}

TEST_CASE("a full-vocabulary loss under TP: every rank holds all s x b x V logits") {
  // torchtitan with parallelism.disable_loss_parallel (parallel_dims.loss_parallel_enabled is
  // then false): the LM head's output is replicated, so each of the 4 TP ranks runs the aten
  // loss (12 B per logit eager, 4 compiled) over all 128256 entries, not loss_parallel's 16 B
  // over a quarter of them. Megatron's 2 B activation-dtype logits likewise lose the 1/tp.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 8);
  t.framework = load_framework(Framework::torchtitan);
  t.full_vocab_loss = true;
  ParallelPlan p = test::plan(2, 4, 1);
  p.sequence_parallel = true;
  const ClusterSpec c = test::cluster(8);
  CHECK(estimate_memory(m, t, p, c).stages.front().logits_bytes ==
        doctest::Approx(8192.0 * 128256.0 * 12.0));
  t.compiled_loss = true;
  CHECK(estimate_memory(m, t, p, c).stages.front().logits_bytes ==
        doctest::Approx(8192.0 * 128256.0 * 4.0));
  t.framework = load_framework(Framework::megatron);
  t.compiled_loss = false;
  CHECK(estimate_memory(m, t, p, c).stages.front().logits_bytes ==
        doctest::Approx(8192.0 * 128256.0 * 2.0));
  // Without TP there is nothing to gather: the flag changes nothing.
  const ParallelPlan dp8 = test::plan(8, 1, 1);
  TrainingSpec vocab_parallel = t;
  vocab_parallel.full_vocab_loss = false;
  CHECK(estimate_memory(m, t, dp8, c).stages.front().logits_bytes ==
        estimate_memory(m, vocab_parallel, dp8, c).stages.front().logits_bytes);
}

TEST_CASE("a compiled loss holds the bf16 logits and their bf16 gradient: 4 B per logit") {
  // torchtitan compiles its loss when compiling (components/loss.py build_cross_entropy_loss,
  // from bbb1b616e on): the fused upcast, log-softmax and nll keep no fp32 copy, so the bf16
  // logits (2 B) and the bf16 gradient the graph returns (2 B) are alive at the peak, not the
  // eager loss's 12 B. Under TP loss_parallel's own figure (16 B) stands.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 8);
  t.framework = load_framework(Framework::torchtitan);
  REQUIRE(t.framework.pricing.compiled_logit_bytes == 4.0);
  t.compiled_loss = true;
  ParallelPlan p = test::plan(8, 1, 1);
  p.zero = 3;
  p.recompute = Recompute::selective;
  const StageMemory compiled = estimate_memory(m, t, p, test::cluster(8)).stages.front();
  CHECK(compiled.logits_bytes == doctest::Approx(8192.0 * 128256.0 * 4.0));
  ParallelPlan tp4 = test::plan(2, 4, 1);
  tp4.sequence_parallel = true;
  CHECK(estimate_memory(m, t, tp4, test::cluster(8)).stages.front().logits_bytes ==
        doctest::Approx(8192.0 * 128256.0 / 4 * 16.0));
  // Megatron's profile prices no compiled loss: its 2 B logits stand whatever the flag.
  t.framework = load_framework(Framework::megatron);
  CHECK(t.framework.pricing.compiled_logit_bytes == 0);
  CHECK(estimate_memory(m, t, p, test::cluster(8)).stages.front().logits_bytes ==
        doctest::Approx(8192.0 * 128256.0 * 2.0));
}

TEST_CASE("FSDP2 under pipeline stages: parameters stay gathered, gradients held unsharded") {
  // Llama 3.1 8B on dp 4 x pp 2 with ZeRO-3 under torchtitan, 16 sequences of one: 4
  // micro-batches. Stage 0 holds the embedding, 128256 x 4096 = 525,336,576, and 16 layers of
  // 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096 = 218,112,000: 4,015,128,576.
  // torchtitan's default reshard policy (not pp_enabled) keeps them all gathered in bf16 (2 B);
  // torch.distributed.pipelining syncs gradients only on the last backward, so FSDP2 holds
  // them unsharded in its fp32 reduce dtype (4 B) across micro-batches.
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 16);
  t.framework = load_framework(Framework::torchtitan);
  ParallelPlan p = test::plan(4, 1, 2);
  p.zero = 3;
  const ClusterSpec c = test::cluster(8);
  const double stage0 = 525336576.0 + 16.0 * 218112000.0;
  const StageMemory s = estimate_memory(m, t, p, c).stages.front();
  CHECK(s.params == doctest::Approx(stage0));
  CHECK(s.params_kept_gathered);
  CHECK(s.gathered_layers_bytes == doctest::Approx(2.0 * stage0));
  CHECK(s.accumulated_grad_bytes == doctest::Approx(4.0 * stage0));
  CHECK(s.unsharded_grad_bytes == 0.0);
  // Reduce-scattered every micro-batch instead: one layer's gradient at a time, in bf16.
  t.grad_sync = GradSync::every_micro_batch;
  const StageMemory every = estimate_memory(m, t, p, c).stages.front();
  CHECK(every.accumulated_grad_bytes == 0.0);
  CHECK(every.unsharded_grad_bytes == doctest::Approx(2.0 * 218112000.0));
  // Megatron's ZeRO-3 pricing (no such convention): the current and the prefetched layer.
  t.grad_sync = GradSync::framework;
  t.framework = load_framework(Framework::megatron);
  const StageMemory meg = estimate_memory(m, t, p, c).stages.front();
  CHECK_FALSE(meg.params_kept_gathered);
  CHECK(meg.gathered_layers_bytes == doctest::Approx(2.0 * 2.0 * 218112000.0));
  CHECK(meg.accumulated_grad_bytes == 0.0);
  // Without pipeline stages torchtitan reshards after forward and syncs every micro-batch.
  t.framework = load_framework(Framework::torchtitan);
  const StageMemory flat = estimate_memory(m, t, test::plan(8, 1, 1), c).stages.front();
  CHECK_FALSE(flat.params_kept_gathered);
  CHECK(flat.accumulated_grad_bytes == 0.0);
  // Asked for, deferral holds the whole model's gradients: 8,030,261,248 params x 4 B.
  t.grad_sync = GradSync::deferred;
  ParallelPlan accum = test::plan(4, 1, 1);
  accum.zero = 3;
  const StageMemory held = estimate_memory(m, t, accum, c).stages.front();
  CHECK(held.accumulated_grad_bytes == doctest::Approx(4.0 * 8030261248.0));
}

TEST_CASE("allocated and reserved: the reserve is the fragmentation share") {
  const ModelSpec m = load_model("llama-3.1-8b");
  TrainingSpec t = test::training(8192, 8);
  t.fragmentation = 0.10;
  const StageMemory s = estimate_memory(m, t, test::plan(8, 1, 1), test::cluster(8)).worst();
  CHECK(s.allocated_bytes() == doctest::Approx(s.total_bytes() - s.fragmentation_bytes));
  CHECK(s.fragmentation_bytes ==
        doctest::Approx(0.10 * (s.activations_bytes + s.transient_bytes())));
}
