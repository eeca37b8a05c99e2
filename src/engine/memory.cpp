// Per-device memory: ZeRO-sharded model states (Rajbhandari et al. 2020), activations from the
// op list in layer.cpp held for the in-flight micro-batches of each pipeline stage (Korthikanti
// et al. 2022), the transient peaks of recompute and ZeRO-3 gathers, and labelled overheads.
#include "shardplan/memory.hpp"

#include <algorithm>

#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

// Adafactor (Shazeer & Stern 2018) without momentum keeps one fp32 row and one column vector
// per weight matrix and a full fp32 second moment for vectors: bytes per parameter overall.
double adafactor_bytes_per_param(const ModelSpec& m) {
  if (!m.has_architecture()) return 0;
  const double h = m.hidden;
  const double q = static_cast<double>(m.heads) * m.head_dim;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim;
  const double f = m.ffn_hidden;
  const double experts = m.is_moe() ? m.experts : 1;
  const double up = m.gated_mlp() ? 2.0 * f : f;
  double per_layer = (h + q + 2.0 * kv) + (q + h) + experts * ((h + up) + (f + h));
  per_layer += 2.0 * h;  // norm vectors, unfactored
  const double tables = (m.vocab + h) * (m.tied_embeddings ? 1.0 : 2.0);
  return 4.0 * (m.layers * per_layer + tables) / count_params(m).total;
}

int communicators(const ParallelPlan& p) {
  int n = 0;
  if (p.dp * p.cp > 1) ++n;
  if (p.hybrid_shard()) ++n;  // the replicate group beside the shard group
  if (p.tp > 1) ++n;
  if (p.pp > 1) n += 2;  // send to the next stage, receive from the previous
  if (p.cp > 1) ++n;
  if (p.ep > 1) ++n;
  return n;
}

// torchtitan's selective "op" policy (models/llama3/infra/parallelize.py _custom_policy): a
// block keeps its input and the outputs of the ops in its save list, except every second
// matmul. Of Llama's seven (wq, wk, wv, wo, w1, w3, w2) it keeps wq (h), wv (kv), w1 (ffn) and
// w2 (h), and SDPA's output (h): 4h + kv + ffn per token, sharded by tp (torchtitan's TP is
// sequence parallel).
double op_policy_saved_bytes(const MicroBatchWork& w, const ModelSpec& m, const TrainingSpec& tr,
                             const ParallelPlan& p) {
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim;
  const double per_token = 4.0 * m.hidden + kv + m.ffn_hidden;
  return w.tokens * per_token * tr.recipe.activation_bytes / p.tp;
}

}  // namespace

StateBytes state_bytes_per_param(const ModelSpec& m, const TrainingSpec& tr) {
  SHARDPLAN_CHECK(recipe_matches(tr), "a training spec priced with another precision's recipe");
  // Every byte count is the recipe row's (profiles/precisions/*.json and their sources): the
  // weights in their dtype, the low-precision copies beside them (TE's fp8 weight cache, MXFP8's
  // row- and column-wise copies), 16-bit gradients unless fp32 main grads are asked for, the
  // fp32 master (none in fp32 or bf16-pure) and the moments (bf16 under bf16-pure, where
  // torch.optim.AdamW's zeros_like(param) states are bf16).
  const PrecisionRecipe& r = tr.recipe;
  StateBytes b;
  b.weights = r.weight_bytes;
  b.weight_copies = r.weight_copy_bytes;
  b.gather = r.all_gather_bytes;
  b.gradients = tr.fp32_grads ? 4.0 : r.gradient_bytes;
  const double master = r.master_bytes;  // fp32 copy it updates
  const double moment = r.moment_bytes;
  switch (tr.optimizer) {
    case OptimizerKind::adamw:
      b.optimizer = master + moment + moment;
      break;  // momentum + variance
    case OptimizerKind::sgd_momentum:
      b.optimizer = master + moment;
      break;
    case OptimizerKind::adafactor:
      // transformers' Adafactor upcasts a 16-bit gradient to fp32 and keeps its factors in that
      // dtype (optimization.py Adafactor.step: grad.float(), state .to(grad)) in every precision.
      b.optimizer = master + adafactor_bytes_per_param(m);
      break;
    case OptimizerKind::adam_8bit:
      // bitsandbytes blockwise 8-bit states: 1 byte each for momentum and variance, plus an
      // fp32 absmax per 256-element block for each (Dettmers et al. 2022), whatever the weights.
      b.optimizer = master + 2.0 + 2.0 * 4.0 / 256.0;
      break;
  }
  return b;
}

ActivationProfile activation_profile(const MicroBatchWork& w, const ModelSpec& m,
                                     const TrainingSpec& tr, const ParallelPlan& p) {
  ActivationProfile a;
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    a.layer_saved[static_cast<int>(r)] = saved_activation_bytes(w.layer, r);
    a.dense_layer_saved[static_cast<int>(r)] = saved_activation_bytes(w.dense_layer, r);
  }
  if (tr.framework.pricing.selective == FrameworkPricing::Selective::every_other_matmul &&
      !m.is_moe())
    a.layer_saved[static_cast<int>(Recompute::selective)] = op_policy_saved_bytes(w, m, tr, p);
  a.layer_working = full_saved_bytes(w.layer);
  // The embedding and LM head are not recomputed (Megatron-LM checkpoints transformer layers).
  a.embedding_saved = saved_activation_bytes(w.embedding, Recompute::none);
  a.head_saved = saved_activation_bytes(w.head, Recompute::none);
  // The framework's loss may hold more per logit than the activation dtype (an fp32 upcast).
  // Its peak figure counts the fp32 softmax the loss keeps for backward (profiles/frameworks/
  // "peak_bytes_per_logit"), so the head's saved activations leave it out: not counted twice.
  // Under TP the loss runs on vocabulary-sharded logits, by another implementation
  // (torchtitan's loss_parallel) that may hold more per logit.
  // A compiled loss (torch.compile fuses the upcast, the log-softmax and its backward) holds
  // less; under TP the vocabulary-parallel figure stands. A full-vocabulary loss under TP
  // (tr.full_vocab_loss) runs the single-device loss on the gathered logits: every rank holds
  // all s x b x V of them.
  const FrameworkPricing& f = tr.framework.pricing;
  const bool vocab_parallel = p.tp > 1 && !gathers_vocabulary(tr, p);
  const double framework_bytes =
      vocab_parallel && f.logit_bytes_vocab_parallel > 0 ? f.logit_bytes_vocab_parallel
      : tr.compiled_loss && f.compiled_logit_bytes > 0   ? f.compiled_logit_bytes
                                                         : f.logit_bytes;
  const bool loss_peak_given = framework_bytes > 0;
  if (w.mtp_layers > 0) a.mtp_saved = saved_activation_bytes(w.mtp, Recompute::none);
  if (loss_peak_given) {
    a.head_saved -= w.loss_saved_bytes;
    if (w.mtp_layers > 0) a.mtp_saved -= w.loss_saved_bytes;
  }
  const double logit_bytes = loss_peak_given ? framework_bytes : tr.recipe.activation_bytes;
  a.logits = w.tokens * m.vocab / (vocab_parallel ? p.tp : 1) * logit_bytes;
  return a;
}

double layers_in_flight(int layers, const ParallelPlan& p, int micro_batches, int stage) {
  if (p.pp == 1) return layers;  // accumulation runs micro-batches one after another
  return microbatches_in_flight(p, micro_batches, stage) * stage_layers(layers, p, stage);
}

bool defers_grad_sync(const TrainingSpec& tr, const ParallelPlan& p) {
  if (p.zero < 2) return false;  // ZeRO-0/1 gradients are unsharded anyway
  switch (tr.grad_sync) {
    case GradSync::every_micro_batch:
      return false;
    case GradSync::deferred:
      return true;
    case GradSync::framework:
      break;
  }
  return p.pp > 1 && tr.framework.pricing.fsdp_defer_grad_sync_with_pp;
}

bool syncs_grads_once(const TrainingSpec& tr, const ParallelPlan& p) {
  return micro_batches_per_step(tr, p) > 1 && defers_grad_sync(tr, p);
}

bool keeps_params_gathered(const TrainingSpec& tr, const ParallelPlan& p) {
  // torchtitan parallelize.py apply_fsdp: reshard_after_forward_policy "default" is
  // `not pp_enabled`, to avoid an all-gather per micro-batch under pipeline schedules.
  return p.zero >= 3 && p.pp > 1 &&
         tr.framework.pricing.fsdp_reshard == FrameworkPricing::Reshard::not_with_pp;
}

Zero3Gathers zero3_gathers(const TrainingSpec& tr, const ParallelPlan& p) {
  Zero3Gathers g;
  if (!keeps_params_gathered(tr, p)) return g;
  g.backward = false;
  g.once_per_step = defers_grad_sync(tr, p);
  return g;
}

MemoryInputs memory_inputs(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p) {
  MemoryInputs in;
  in.per_param = state_bytes_per_param(m, tr);
  in.activations_known = m.has_architecture();
  if (in.activations_known)
    in.activations = activation_profile(describe_micro_batch(m, tr, p), m, tr, p);
  return in;
}

StageMemory stage_memory(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                         const ClusterSpec& c, const MemoryInputs& in, int stage,
                         StageParamsMemo* stages) {
  StageMemory s;
  s.stage = stage;
  const StateBytes& per = in.per_param;
  const DeviceParams dev = device_params(m, p, stage, stages);
  s.params = dev.total();

  // ZeRO shards over every rank that holds the same weights: dp x cp for dense weights, and
  // dp x cp / ep for experts (Megatron-LM's expert-data-parallel group). Hybrid sharding shards
  // over its shard group only (dp_shard x cp: torchtitan's "dp_shard_cp" mesh dimension) and
  // holds the same shard on each of the dp / dp_shard replicas.
  const double replicas = static_cast<double>(p.shard_degree()) * p.cp;
  // Experts: tp x dp x cp ranks hold ep x etp distinct shards (Megatron-Core MoE folding).
  const double expert_replicas = replicas * p.tp / (static_cast<double>(p.ep) * p.expert_tp());
  auto states = [&](double bytes, bool sharded) {
    return sharded ? bytes * (dev.dense / replicas + dev.experts / expert_replicas)
                   : bytes * dev.total();
  };
  s.weights_bytes = states(per.weights, p.zero >= 3);
  s.weight_copies_bytes = states(per.weight_copies, p.zero >= 3);
  s.gradients_bytes = states(per.gradients, p.zero >= 2);
  s.optimizer_bytes = states(per.optimizer, p.zero >= 1);

  if (in.activations_known) {
    const ActivationProfile& a = in.activations;
    const bool first = stage == 0;
    const bool last = stage == head_stage(p);
    const int micro_batches = std::max(1, micro_batches_per_step(tr, p));
    s.layers_in_flight = layers_in_flight(m.layers, p, micro_batches, stage);
    // A stage's layers are MoE and dense in the proportion it holds them.
    const int here = m.has_architecture() ? stage_layers(m.layers, p, stage) : 0;
    const double moe_share =
        here > 0 && m.is_moe() ? static_cast<double>(stage_moe_layers(m, p, stage)) / here : 1.0;
    const int r = static_cast<int>(p.recompute);
    s.layer_activations_bytes = s.layers_in_flight * (moe_share * a.layer_saved[r] +
                                                      (1.0 - moe_share) * a.dense_layer_saved[r]);
    s.activations_bytes = s.layer_activations_bytes;
    if (first)
      s.activations_bytes += (p.pp == 1 ? 1.0 : std::min(p.pp, micro_batches)) * a.embedding_saved;
    if (last) {
      s.activations_bytes += a.head_saved;
      s.logits_bytes = a.logits;
      // The MTP modules (layer.hpp MicroBatchWork::mtp) beside the LM head: each one's layer
      // for every micro-batch in flight, like the stage's own, and its head like the main one.
      if (m.mtp_layers > 0) {
        const double in_flight =
            p.pp == 1 ? 1.0 : microbatches_in_flight(p, micro_batches, stage);
        s.activations_bytes += m.mtp_layers * (in_flight * a.layer_saved[r] + a.mtp_saved);
      }
    }
    if (p.recompute == Recompute::full) s.recompute_working_bytes = a.layer_working;
  }
  if (p.zero >= 3) {
    // ZeRO-3/FSDP gather one layer at a time and prefetch the next; the gathered layer's
    // gradient exists in full until it is reduce-scattered. Without reshard after forward,
    // every unit of the stage stays gathered from its forward to its backward.
    s.params_kept_gathered = keeps_params_gathered(tr, p);
    const double gathered = s.params_kept_gathered ? dev.total() : 2.0 * dev.largest_layer;
    s.gathered_layers_bytes = gathered * (per.weights + per.weight_copies);
    s.unsharded_grad_bytes = dev.largest_layer * per.gradients;
  }
  if (syncs_grads_once(tr, p)) {
    // FSDP2 accumulates the unsharded gradients of every unit across the micro-batches, in
    // MixedPrecisionPolicy.reduce_dtype (_fsdp_param.py to_accumulated_grad_if_needed), and
    // reduce-scatters them after the last; the per-layer transient is part of them.
    const double bytes = tr.framework.pricing.fsdp_accumulated_grad_bytes > 0
                             ? tr.framework.pricing.fsdp_accumulated_grad_bytes
                             : per.gradients;
    s.accumulated_grad_bytes = dev.total() * bytes;
    s.unsharded_grad_bytes = 0;
  }
  offload_stage_memory(s, p, per, tr.framework.caps.offload,
                       m.has_architecture() ? stage_layers(m.layers, p, stage) : 0);
  s.context_bytes = c.gpu.context_bytes;
  s.nccl_communicators = communicators(p);
  s.nccl_bytes = s.nccl_communicators * kNcclBytesPerCommunicator;
  s.ep_buffer_bytes = ep_buffer_bytes(m, tr, p);
  s.fragmentation_bytes = tr.fragmentation * (s.activations_bytes + s.transient_bytes());
  return s;
}

MemoryBreakdown estimate_memory(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                                const ClusterSpec& c) {
  return estimate_memory(m, tr, p, c, memory_inputs(m, tr, p));
}

MemoryBreakdown estimate_memory(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                                const ClusterSpec& c, const MemoryInputs& in) {
  MemoryBreakdown out;
  out.capacity_bytes = c.gpu.memory_bytes;
  out.bytes_per_param = in.per_param;
  out.activations_known = in.activations_known;
  out.fragmentation = tr.fragmentation;
  const ParamCounts counts = count_params(m);
  out.total_params = counts.total;
  out.gathered_layer_bytes = m.has_architecture() ? counts.largest_layer * in.per_param.weights : 0;
  for (int stage = 0; stage < p.pp; ++stage) {
    out.stages.push_back(stage_memory(m, tr, p, c, in, stage));
    if (out.stages.back().total_bytes() > out.stages[out.worst_stage].total_bytes()) {
      out.worst_stage = stage;
    }
  }
  if (p.offload.any()) {
    double host = 0;
    for (const StageMemory& s : out.stages) host = std::max(host, s.host_bytes);
    out.host_bytes_per_node = host * gpus_on_node(c);
    out.host_capacity_bytes = c.host.memory_bytes;
    out.host_fits = out.host_bytes_per_node <= out.host_capacity_bytes;
  }
  out.headroom_bytes = c.headroom_bytes;
  out.fits = out.total_bytes() <= c.usable_bytes() && out.host_fits;
  return out;
}

double peak_memory_bytes(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                         const ClusterSpec& c, const MemoryInputs& in, StageParamsMemo* stages) {
  const double first = stage_memory(m, tr, p, c, in, 0, stages).total_bytes();
  if (p.pp == 1) return first;
  const double last = stage_memory(m, tr, p, c, in, p.pp - 1, stages).total_bytes();
  // A lighter first or last stage (given, or from an uneven split) can leave the second
  // stage heaviest.
  const bool uneven = p.first_stage_layers >= 0 || p.last_stage_layers >= 0 ||
                      (m.has_architecture() && m.layers % (p.pp * p.interleave) != 0);
  double peak = std::max(first, last);
  if (p.pp == 2) return peak;
  if (uneven) peak = std::max(peak, stage_memory(m, tr, p, c, in, 1, stages).total_bytes());
  const int moe_stage = heaviest_moe_stage(m, p, stages);
  if (moe_stage > 1)
    peak = std::max(peak, stage_memory(m, tr, p, c, in, moe_stage, stages).total_bytes());
  return peak;
}

namespace {

// Offloaded layers: of the in-flight layer-micro-batches, N layers' worth per micro-batch leave,
// less what the device keeps while copies run (kOffloadedLayersKeptOnDevice).
void offload_layers_memory(StageMemory& s, int layers, int stage_layers) {
  if (layers <= 0 || stage_layers <= 0 || s.layers_in_flight <= 0) return;
  const double per_layer = s.layer_activations_bytes / s.layers_in_flight;
  const double micro_batches = s.layers_in_flight / stage_layers;
  const double offloaded = std::min(layers, stage_layers) * micro_batches;
  const double moved = (offloaded - std::min(offloaded, kOffloadedLayersKeptOnDevice)) * per_layer;
  s.layer_activations_bytes -= moved;
  s.activations_bytes -= moved;
  s.offloaded_bytes += moved;
  s.host_bytes += moved;
}

}  // namespace

void offload_stage_memory(StageMemory& s, const ParallelPlan& p, const StateBytes& per,
                          const OffloadCaps& caps, int stage_layers) {
  const Offload& o = p.offload;
  if (!o.any()) return;
  const bool nvme = o.to == OffloadTarget::nvme;
  auto move = [&](double bytes) {
    s.offloaded_bytes += bytes;
    (nvme ? s.nvme_bytes : s.host_bytes) += bytes;
  };
  if (o.optimizer && per.optimizer > 0) {
    const double shard_params = s.optimizer_bytes / per.optimizer;
    s.host_bytes += shard_params * kHostGradientBytesPerParam;
    move(s.optimizer_bytes);
    s.optimizer_bytes = 0;
    if (caps.gradients_with_optimizer) {
      // Their host copy is the fp32 shard above; the device keeps one reduce bucket.
      const double kept =
          std::min(s.gradients_bytes, caps.gradient_bucket_elements * per.gradients);
      s.offloaded_bytes += s.gradients_bytes - kept;
      s.gradients_bytes = kept;
    }
  }
  if (o.params) {
    move(s.weights_bytes);
    s.weights_bytes = 0;
  }
  if (o.activations && s.layers_in_flight > 0) {
    const double per_layer = s.layer_activations_bytes / s.layers_in_flight;
    const double kept = std::min(s.layer_activations_bytes, 2.0 * per_layer);
    const double moved = s.layer_activations_bytes - kept;
    s.layer_activations_bytes = kept;
    s.activations_bytes -= moved;
    s.offloaded_bytes += moved;
    s.host_bytes += moved;
  }
  offload_layers_memory(s, o.activation_layers, stage_layers);
}

}  // namespace shardplan
