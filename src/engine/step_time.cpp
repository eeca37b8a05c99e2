// The step model. Compute: each op of layer.cpp timed on the GPU profile (compute.cpp), backward
// GEMMs at twice the forward FLOPs, recompute as the forward again (full) or the core attention
// again (selective). Pipeline: 1F1B with the
// slowest stage setting the pace and a (p-1)/v bubble (Narayanan et al. 2021, Sec. 2.2).
// Communication: collectives.hpp on the tier each group spans, hidden behind the compute it
// overlaps with in Megatron-LM / DeepSpeed / FSDP, exposed otherwise.
#include "shardplan/step_time.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/error.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/step_simulation.hpp"

namespace shardplan {
namespace {

double tp_forward_s(const TpTraffic& t, const Placement& g, const ClusterSpec& c) {
  if (t.bytes <= 0 || g.ranks <= 1) return 0;
  return t.all_reduces * collective_time(Collective::all_reduce, t.bytes, g, c) +
         t.gathers * collective_time(Collective::all_gather, t.bytes, g, c) +
         t.scatters * collective_time(Collective::reduce_scatter, t.bytes, g, c);
}

double tp_backward_s(const TpTraffic& t, const Placement& g, const ClusterSpec& c) {
  if (t.bytes <= 0 || g.ranks <= 1) return 0;
  return t.all_reduces * collective_time(Collective::all_reduce, t.bytes, g, c) +
         (t.gathers + t.backward_regathers) *
             collective_time(Collective::all_gather, t.bytes, g, c) +
         t.scatters * collective_time(Collective::reduce_scatter, t.bytes, g, c);
}

}  // namespace

MicroBatchCost micro_batch_cost(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                                const ClusterSpec& c) {
  MicroBatchCost cost;
  cost.forward_model_flops = forward_model_flops(m, tr.global_batch, tr.seq_len);
  if (!m.has_architecture()) return cost;
  const MicroBatchWork w = describe_micro_batch(m, tr, p);
  SHARDPLAN_CHECK(recipe_matches(tr), "a training spec priced with another precision's recipe");
  const PrecisionRecipe& recipe = tr.recipe;
  const MathDtype attention_dtype = sixteen_bit(recipe.gemm_dtype);
  cost.tokens = w.tokens;
  const double grouped = tr.framework.pricing.grouped_gemm_16bit_share;
  cost.layer = time_layer(w.layer, c.gpu, recipe, m.layers, grouped);
  cost.dense_layer = w.dense_layers > 0 && w.moe_layers > 0
                         ? time_layer(w.dense_layer, c.gpu, recipe, m.layers, grouped)
                         : cost.layer;
  GemmPrecision edges = edge_gemms(recipe);
  edges.grouped_16bit_share = grouped;  // an MTP layer's experts
  cost.embedding = time_block(w.embedding, c.gpu, edges);
  cost.head = time_block(w.head, c.gpu, edges);
  if (w.mtp_layers > 0) cost.mtp = time_block(w.mtp, c.gpu, edges);
  cost.activations = activation_profile(w, m, tr, p);
  const double e = recipe.activation_bytes;

  const Placement tp = placement_of(Parallelism::tensor, p, c);
  const TpTraffic& lt = w.layer.tp;
  cost.collectives.tp_bytes = lt.bytes;
  cost.tp_forward_s = tp_forward_s(lt, tp, c);
  cost.tp_backward_s = tp_backward_s(lt, tp, c);
  cost.tp_forward_calls = lt.all_reduces + lt.gathers + lt.scatters;
  cost.tp_backward_calls = cost.tp_forward_calls + lt.backward_regathers;
  cost.tp_edges_s = tp_forward_s(w.embedding.tp, tp, c) + tp_backward_s(w.embedding.tp, tp, c) +
                    tp_forward_s(w.head.tp, tp, c) + tp_backward_s(w.head.tp, tp, c) +
                    w.mtp_layers * (tp_forward_s(w.mtp.tp, tp, c) + tp_backward_s(w.mtp.tp, tp, c));
  cost.tp_loss_gather_s = collective_time(Collective::all_gather, w.loss_gather_bytes, tp, c);
  // The framework's TP collectives reach this share of the link's busbw (its profile).
  const double tp_share = tr.framework.pricing.tp_busbw.at(p.tp);
  cost.tp_forward_s /= tp_share;
  cost.tp_backward_s /= tp_share;
  cost.tp_edges_s /= tp_share;
  cost.tp_loss_gather_s /= tp_share;

  for (const Op& op : w.layer.ops) {
    if (op.kind == OpKind::attention || (op.rerun_by & bit(RecomputeModule::core_attn)) != 0) {
      cost.attention_s += op_forward_s(op, c.gpu, attention_dtype);
    }
  }
  if (p.cp > 1 && tr.context_parallel == ContextParallel::ulysses) {
    // Ulysses: this rank's q, k and v (its tokens, the TP rank's heads) go all-to-all to the
    // whole sequence over heads / cp before attention, and the output comes back after it
    // (Jacobs et al. 2023, Sec. 3.1); four calls, each buffer as nccl-tests sizes it.
    const Placement g = placement_of(Parallelism::context, p, c);
    const double heads = static_cast<double>(m.heads) / p.tp;
    const double v_dim = m.mla.v_head_dim > 0 ? m.mla.v_head_dim : m.head_dim;
    const double q = w.tokens * heads * m.head_dim * e;
    const double kv = w.tokens * local_kv_heads(m, p.tp) * m.head_dim * e;
    const double out = w.tokens * heads * v_dim * e;
    cost.collectives.cp_bytes = q + 2.0 * kv + out;
    cost.collectives.cp_s = collective_time(Collective::all_to_all, q, g, c) +
                            2.0 * collective_time(Collective::all_to_all, kv, g, c) +
                            collective_time(Collective::all_to_all, out, g, c);
  } else if (p.cp > 1) {
    // Ring attention: cp - 1 steps, each passing this rank's K and V chunk to its neighbour.
    cost.collectives.cp_bytes = 2.0 * w.tokens * local_kv_heads(m, p.tp) * m.head_dim * e;
    cost.collectives.cp_s =
        (p.cp - 1) * collective_time(Collective::send_recv, cost.collectives.cp_bytes,
                                     placement_of(Parallelism::context, p, c), c);
  }
  if (p.ep > 1 && w.layer.expert_visits > 0) {
    cost.ep = expert_traffic(m, tr, placement_of(Parallelism::expert, p, c), c,
                             w.layer.expert_tokens, w.layer.expert_visits);
    if (w.layer.expert_gather > 1) {
      // The expert-TP group gathers what its members received before the experts and
      // reduce-scatters their outputs before the combine: nccl-tests sizes, the gathered bytes.
      const Placement etp = expert_tp_placement(p, c);
      const double gathered = w.layer.expert_visits * w.layer.expert_gather * m.hidden;
      cost.ep.expert_tp_s =
          collective_time(Collective::all_gather, gathered * dispatch_element_bytes(tr), etp, c) +
          collective_time(Collective::reduce_scatter, gathered * e, etp, c);
    }
    cost.collectives.ep_bytes = (cost.ep.dispatch_bytes + cost.ep.combine_bytes) / 2.0;
    cost.collectives.ep_s = cost.ep.layer_s();
  }
  // Megatron-LM sends 1/t of a boundary activation from each tensor-parallel rank (the
  // scatter-gather optimisation of Narayanan et al. 2021 Sec. 4.1; natural with SP).
  cost.collectives.pp_bytes = w.tokens * m.hidden * e / p.tp;
  return cost;
}

namespace {

// Pure bf16 (torch.optim.AdamW on bf16 parameters, no master): the gradient norm (read g), the
// update in place (read g, read and write every state and the weight), the gradients zeroed (g).
double pure_optimizer_bytes_per_param(const StateBytes& b) {
  const double g = b.gradients;
  return g + (g + 2.0 * b.optimizer + 2.0 * b.weights) + g;
}

// Bytes the optimizer step streams per local parameter, pass by pass as Megatron-LM's mixed-
// precision optimizer runs them: 16-bit gradients copied into fp32 (read g, write 4); fp16 only:
// unscale and inf/nan check (read 4, write 4); the gradient norm for clipping (read 4); the
// fused update (read the gradient 4, read and write every optimizer state); the new weights
// cast to 16 bits (read the fp32 master 4, write the weight); the gradient buffer zeroed (g).
double optimizer_bytes_per_param(const StateBytes& b, const TrainingSpec& tr) {
  if (tr.precision == Precision::bf16_pure) return pure_optimizer_bytes_per_param(b);
  const bool mixed = tr.precision != Precision::fp32;
  const double grad32 = mixed && b.gradients < 4 ? b.gradients + 4.0 : 0.0;
  const double unscale = tr.precision == Precision::fp16 ? 8.0 : 0.0;
  const double norm = 4.0;
  const double update = 4.0 + 2.0 * b.optimizer;
  const double cast = mixed ? 4.0 + b.weights : 0.0;
  const double zero = b.gradients;
  return grad32 + unscale + norm + update + cast + zero;
}

}  // namespace

namespace {

// A stage's passes for one micro-batch with its exposed communication spread over them in
// proportion, so that they add up to the stage's time per micro-batch.
PassTimes pass_times(const StageCost& s) {
  PassTimes t;
  const double compute = s.forward_s + s.backward_s;
  if (compute <= 0) return t;
  const double k = s.total() / compute;
  t.forward_s = k * s.forward_s;
  t.weight_grad_s = k * s.weight_grad_s;
  t.input_grad_s = k * (s.backward_s - s.weight_grad_s);
  return t;
}

// The stage's passes for the simulator: in-pass TP and CP exposure spread over the compute
// windows as pass_times spreads it, the all-to-alls half in forward and half in backward (the
// same dispatch and combine each way), pipeline and ZeRO-3 traffic left to the simulator.
// The passes carry the whole all-to-all: the simulator hides what its F&B pairs hide
// (sim_pairs_passes), where the closed form takes paired_share.
StageWork stage_work(const StageCost& s) {
  StageWork w;
  const double compute = s.forward_s + s.backward_s;
  if (compute <= 0) return w;
  const double k = 1.0 + (s.tp_exposed_s + s.cp_exposed_s) / compute;
  const double ep_forward = (s.ep_s - s.ep_recompute_s) / 2.0;
  const double ep_backward = s.ep_s - ep_forward;  // with the recomputed forward's
  w.forward_s = k * s.forward_s + ep_forward;
  w.input_grad_s = k * (s.backward_s - s.weight_grad_s) + ep_backward;
  w.weight_grad_s = k * s.weight_grad_s;
  w.recompute_s = s.recompute_s;
  w.ep_forward_s = ep_forward;
  w.ep_backward_s = ep_backward;
  w.tp_hidden_s = std::max(0.0, s.tp_s - s.tp_exposed_s);
  w.cp_hidden_s = std::max(0.0, s.cp_s - s.cp_exposed_s);
  w.layers = s.layers;
  w.zero3_units = s.zero3_units;
  w.zero3_gather_s = s.zero3_ag_s;
  w.zero3_reduce_s = s.zero3_rs_s + s.zero3_ar_s;
  return w;
}

// The average device's passes: the schedule's fill and drain are counted in micro-batch slots
// (Narayanan et al. 2021), and with unequal stages each slot takes its stage's time.
PassTimes mean_passes(const StepTime& t, int pp) {
  if (pp <= 1) return t.first_stage;
  const double n = pp;
  auto avg = [&](double PassTimes::*f) {
    return (t.first_stage.*f + t.last_stage.*f + (n - 2.0) * (t.middle_stage.*f)) / n;
  };
  return {avg(&PassTimes::forward_s), avg(&PassTimes::input_grad_s),
          avg(&PassTimes::weight_grad_s)};
}

// Offload's share of the step (offload.hpp): `local` parameters updated by this device.
OffloadTime offload_cost(const ModelSpec& m, const ParallelPlan& p, const ClusterSpec& c,
                         const MemoryInputs& mem, double local, const StepTime& t) {
  OffloadInputs in;
  in.shard_params = local;
  in.weight_bytes_per_param = mem.per_param.weights;
  in.gradient_bytes_per_param = mem.per_param.gradients;
  in.optimizer_bytes_per_param = mem.per_param.optimizer;
  in.micro_batches = t.micro_batches;
  if (mem.activations_known && m.has_architecture()) {
    in.activation_bytes_per_micro_batch =
        stage_layers(m.layers, p, 0) * mem.activations.layer_saved[static_cast<int>(p.recompute)];
  }
  in.compute_s = t.compute_s;
  in.gpus_on_node = gpus_on_node(c);
  if (p.offload.activation_layers > 0 && m.has_architecture()) {
    // Offloaded layers hide behind one layer's pass on the first stage (which holds them at pp 1).
    const double layers = std::max(1, stage_layers(m.layers, p, 0));
    in.layer_activation_bytes = mem.activations.layer_saved[static_cast<int>(p.recompute)];
    in.layer_forward_s = t.first_stage.forward_s / layers;
    in.layer_backward_s = (t.first_stage.input_grad_s + t.first_stage.weight_grad_s) / layers;
  }
  return offload_time(p.offload, c.host, in);
}

bool host_fits(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
               const ClusterSpec& c, const MemoryInputs& mem) {
  double host = stage_memory(m, tr, p, c, mem, 0).host_bytes;
  if (p.pp > 1) host = std::max(host, stage_memory(m, tr, p, c, mem, p.pp - 1).host_bytes);
  return host * gpus_on_node(c) <= c.host.memory_bytes;
}

}  // namespace

namespace {

// What every part of one evaluation reads: the inputs, and where each group sits on the
// cluster, placed once.
struct Context {
  const ModelSpec& m;
  const TrainingSpec& tr;
  const ParallelPlan& p;
  const ClusterSpec& c;
  const MicroBatchCost& cost;
  const MemoryInputs& mem;
  Placements at;
  int micro_batches = 1;  // per step, per data-parallel replica
  StageParamsMemo* stages = nullptr;  // the search's memo of per-stage counts, or none
  DeviceParams device(int stage) const { return device_params(m, p, stage, stages); }
  int heaviest_moe_stage() const { return shardplan::heaviest_moe_stage(m, p, stages); }
};

// The FLOPs selective recompute runs again over the step: each device's per layer and
// micro-batch, over the model's layers (and MTP modules), the micro-batches of the global batch
// and the tensor- and context-parallel ranks that share a micro-batch.
double selective_recompute_flops(const Context& x) {
  const ModelSpec& m = x.m;
  const double moe = m.is_moe() ? m.moe_layer_count() : 0;
  const double per_micro_batch = (moe + m.mtp_layers) * x.cost.layer.selective_flops +
                                 (m.layers - moe) * x.cost.dense_layer.selective_flops;
  return per_micro_batch * static_cast<double>(x.tr.global_batch) / x.p.micro_batch * x.p.tp *
         x.p.cp;
}

// Params only: 6 N tokens per micro-batch at an assumed MFU, forward 1/3, backward 2/3.
void assumed_compute(const Context& x, const DeviceParams& dev, StageCost& s) {
  const double peak = peak_flops(x.c.gpu, x.tr.recipe.gemm_dtype);
  const double flops = 6.0 * dev.total() * x.p.micro_batch * x.tr.seq_len / x.p.cp;
  s.compute_s = flops / (peak * kParamsOnlyMfu);
  s.forward_s = s.compute_s / 3.0;
  s.backward_s = s.compute_s - s.forward_s;
}

// One layer of the stage: its MoE and dense layers mixed in the share it holds of each.
BlockTime mixed_layer(const MicroBatchCost& cost, double moe_share) {
  BlockTime l = cost.layer;
  const BlockTime& dl = cost.dense_layer;
  const double share = moe_share;
  l.forward_s = share * l.forward_s + (1.0 - share) * dl.forward_s;
  l.backward_s = share * l.backward_s + (1.0 - share) * dl.backward_s;
  l.selective_s = share * l.selective_s + (1.0 - share) * dl.selective_s;
  l.selective_flops = share * l.selective_flops + (1.0 - share) * dl.selective_flops;
  l.gemm_forward_s = share * l.gemm_forward_s + (1.0 - share) * dl.gemm_forward_s;
  return l;
}

// Forward, backward and recompute of the stage's layers, with the embedding on the first stage
// and the LM head on the one that holds it. Returns the stage's average layer.
BlockTime stage_compute(const Context& x, int stage, StageCost& s) {
  const ModelSpec& m = x.m;
  const ParallelPlan& p = x.p;
  const double layers = stage_layers(m.layers, p, stage);
  s.layers = layers;
  const double moe_here = m.is_moe() ? stage_moe_layers(m, p, stage) : layers;
  s.moe_layers = moe_here;
  const BlockTime l = mixed_layer(x.cost, layers > 0 ? moe_here / layers : 1.0);
  double rec = 0;
  if (p.recompute == Recompute::full) rec = l.forward_s;
  if (p.recompute == Recompute::selective) rec = l.selective_s;
  s.forward_s = layers * l.forward_s;
  s.backward_s = layers * (l.backward_s + rec);
  s.recompute_s = layers * rec;
  s.weight_grad_s = layers * l.weight_grad_s;
  for (const BlockTime* edge : {stage == 0 ? &x.cost.embedding : nullptr,
                                stage == head_stage(p) ? &x.cost.head : nullptr}) {
    if (!edge) continue;
    s.forward_s += edge->forward_s;
    s.backward_s += edge->backward_s;
    s.weight_grad_s += edge->weight_grad_s;
  }
  if (stage == head_stage(p) && m.mtp_layers > 0) {
    // The MTP modules beside the LM head: each one `layer`-kind layer, recomputed as the
    // stage's layers are, and its own norms, projection, head and loss (layer.hpp).
    const BlockTime& ml = x.cost.layer;
    const BlockTime& mb = x.cost.mtp;
    const double mrec = p.recompute == Recompute::full        ? ml.forward_s
                        : p.recompute == Recompute::selective ? ml.selective_s
                                                              : 0.0;
    const double n = m.mtp_layers;
    s.forward_s += n * (ml.forward_s + mb.forward_s);
    s.backward_s += n * (ml.backward_s + mrec + mb.backward_s);
    s.recompute_s += n * mrec;
    s.weight_grad_s += n * (ml.weight_grad_s + mb.weight_grad_s);
    s.layers += n;
    if (m.is_moe()) s.moe_layers += n;
  }
  // Kernels slower or faster than the fused ones the GPU profile was fitted on.
  const double speed = x.tr.framework.pricing.compute_speed(x.c.gpu.accuracy_class, x.p.pp);
  s.forward_s /= speed;
  s.backward_s /= speed;
  s.recompute_s /= speed;
  // Fixed costs per layer and micro-batch (host-side, so not scaled by the kernels' speed):
  // a third in forward, two thirds in backward (twice the kernels), and the forward's again
  // where the layer is recomputed in full.
  const FrameworkPricing& fp = x.tr.framework.pricing;
  // CUDA graphs replay what they captured without a launch each: the profile's share is left.
  const double fixed = fp.fixed_cost_s(s.layers, s.moe_layers, x.tr.cuda_graphs);
  const double rerun = p.recompute == Recompute::full ? fixed / 3.0 : 0.0;
  s.forward_s += fixed / 3.0;
  s.backward_s += 2.0 * fixed / 3.0 + rerun;
  s.recompute_s += rerun;
  s.compute_s = s.forward_s + s.backward_s;
  return l;
}

// Tensor, context and expert parallel traffic of the stage's layers for one micro-batch, and
// what of it the compute beside it leaves exposed.
void stage_model_parallel(const Context& x, int stage, const BlockTime& l, StageCost& s) {
  const MicroBatchCost& cost = x.cost;
  const double layers = s.layers;
  // Tensor parallel: the conjugate collectives in backward, and the forward's again when
  // the layer is recomputed in full. Exposed unless Transformer Engine overlaps them with
  // the GEMMs next to them.
  const bool full = x.p.recompute == Recompute::full;
  s.tp_s = layers * (cost.tp_forward_s * (full ? 2.0 : 1.0) + cost.tp_backward_s);
  s.tp_calls = layers * (cost.tp_forward_calls * (full ? 2.0 : 1.0) + cost.tp_backward_calls);
  // The embedding's and LM head's collectives are small; counted on the first stage.
  if (stage == 0) s.tp_s += cost.tp_edges_s;
  // A full-vocabulary loss's logits gather runs where the loss does (not in tp_calls, which
  // counts the layers' collectives of collectives.tp_bytes each, as the edges' are not).
  if (stage == head_stage(x.p)) s.tp_s += cost.tp_loss_gather_s;
  s.tp_exposed_s = x.tr.tp_comm_overlap
                       ? std::max(0.0, s.tp_s - layers * (full ? 4.0 : 3.0) * l.gemm_forward_s)
                       : s.tp_s;
  if (x.tr.context_parallel == ContextParallel::ulysses) {
    // Ulysses: the forward's four all-to-alls (again under full recompute) and their gradients'
    // in backward, each on the critical path: attention waits for its inputs.
    s.cp_s = layers * (full ? 3.0 : 2.0) * cost.collectives.cp_s;
    s.cp_exposed_s = s.cp_s;
  } else {
    // Context parallel: K/V around the ring in forward; K/V and their gradients in backward,
    // each hidden behind the attention it feeds.
    s.cp_s = layers * 3.0 * cost.collectives.cp_s;
    s.cp_exposed_s = layers * (std::max(0.0, cost.collectives.cp_s - cost.attention_s) +
                               std::max(0.0, 2.0 * cost.collectives.cp_s - 2.5 * cost.attention_s));
  }
  // Dense layers send nothing to experts. Recomputing a MoE layer's forward (in full, or the
  // moe module) runs its dispatch and combine again.
  s.ep_recompute_s = reruns_all_to_alls(x.p) ? s.moe_layers * cost.collectives.ep_s : 0.0;
  s.ep_s = s.moe_layers * 2.0 * cost.collectives.ep_s + s.ep_recompute_s;
  s.ep_exposed_s = exposed_all_to_all_s(x.p, x.micro_batches, s.ep_s, s.compute_s);
}

// Whether the step's gradients are reduced once, after the last micro-batch (memory.hpp).
bool deferred_sync(const Context& x) {
  return syncs_grads_once(x.tr, x.p);
}

// Hybrid sharding: after each reduce-scatter inside the shard group, the reduced shard is
// all-reduced across the replicas (FSDP2 _fsdp_collectives.py foreach_reduce: reduce-scatter
// over the shard mesh dimension, then all_reduce over the replicate one; FSDP1 HYBRID_SHARD
// likewise). Seconds for the all-reduce of `shard_bytes`, 0 without replicas.
double replicate_all_reduce_s(const Context& x, double shard_bytes) {
  const Placement& rep = x.at.replicate;
  if (rep.ranks <= 1) return 0;
  return collective_time(Collective::all_reduce, shard_bytes, rep, x.c) /
         x.tr.framework.pricing.zero3_busbw.at(rep.ranks, rep.domains());
}

// ZeRO-3 / FSDP gather one unit at a time (a transformer layer; the embedding and the LM head
// are units of their own), for forward and again for backward (less often when the weights are
// kept gathered: memory.hpp zero3_gathers), and reduce-scatter its
// gradient: per-call latency adds up on large groups. With prefetching each gather hides
// behind the previous unit's compute; the first one of each pass cannot.
void stage_zero3(const Context& x, int stage, const DeviceParams& dev, StageCost& s) {
  const ModelSpec& m = x.m;
  const Placement& dp = x.at.shard;
  const StateBytes& per = x.mem.per_param;
  const double layers = m.has_architecture() ? stage_layers(m.layers, x.p, stage) : 1.0;
  const bool head = m.has_architecture() && stage == head_stage(x.p);
  s.zero3_units = layers + (m.has_architecture() && stage == 0 ? 1 : 0) +
                  (head ? 1 + m.mtp_layers : 0);  // an MTP module is a unit of its own
  const double unit = dev.dense / s.zero3_units;
  // A MoE model's experts are sharded over their own expert-data-parallel group: gathered and
  // reduced there, beside the dense weights over the whole data-parallel group.
  const double expert_unit = dev.experts / s.zero3_units;
  const Placement edp = expert_data_placement(x.p, x.c);
  // What share of busbw the framework's per-unit gathers reach at each group's size.
  const auto share = [&](const Placement& g) {
    return x.tr.framework.pricing.zero3_busbw.at(g.ranks, g.domains());
  };
  s.zero3_ag_s = dense_and_expert_s(Collective::all_gather, unit * per.gather,
                                    expert_unit * per.gather, dp, edp, x.c, share);
  s.zero3_rs_s = dense_and_expert_s(Collective::reduce_scatter, unit * per.gradients,
                                    expert_unit * per.gradients, dp, edp, x.c, share);
  s.zero3_ar_bytes = replica_shard(x.p, unit, expert_unit, edp) * per.gradients;
  s.zero3_ar_s = replicate_all_reduce_s(x, s.zero3_ar_bytes);
  const double n = s.zero3_units;
  const double ag = s.zero3_ag_s, rs = s.zero3_rs_s, ar = s.zero3_ar_s;
  // Kept-gathered weights (memory.hpp zero3_gathers): the backward gathers nothing, so a
  // reducing backward waits on its reductions alone and a deferring one on nothing.
  const Zero3Gathers gathers = zero3_gathers(x.tr, x.p);
  const double bwd_ag = gathers.backward ? ag : 0.0;
  if (x.tr.overlap_param_gather) {
    // Prefetch depth one: unit i+1's gather runs beside unit i's compute, so a pass takes
    // g + (n-1) max(g, c) + c, of which g + (n-1) max(0, g - c) waits on the wire (never
    // more than the n gathers themselves). Backward ends with the last unit's
    // reduce-scatter (and all-reduce), which nothing hides. The all-reduce runs on its own
    // stream: on another link than the shard group's (NVLink inside, the network across) it
    // runs beside the next unit's gather and reduce-scatter, on the same link after them.
    const bool own_link = dp.domains() <= 1 && x.at.replicate.domains() > 1;
    const double chain = own_link ? std::max(bwd_ag + rs, ar) : bwd_ag + rs + ar;
    s.zero3_fwd_exposed_s = ag + (n - 1) * std::max(0.0, ag - s.forward_s / n);
    s.zero3_bwd_exposed_s = bwd_ag + rs + ar + (n - 1) * std::max(0.0, chain - s.backward_s / n);
    s.zero3_bwd_deferred_exposed_s =
        gathers.backward ? ag + (n - 1) * std::max(0.0, ag - s.backward_s / n) : 0.0;
  } else {
    s.zero3_fwd_exposed_s = n * ag;
    s.zero3_bwd_exposed_s = n * (bwd_ag + rs + ar);
    s.zero3_bwd_deferred_exposed_s = n * bwd_ag;
  }
  // Per micro-batch on average: with deferred sync only the last backward reduces, and with
  // weights kept gathered for the step only the first forward gathers.
  const double reducing = deferred_sync(x) ? 1.0 / x.micro_batches : 1.0;
  s.zero3_exposed_s = gathers.forward_share(x.micro_batches) * s.zero3_fwd_exposed_s +
                      reducing * s.zero3_bwd_exposed_s +
                      (1.0 - reducing) * s.zero3_bwd_deferred_exposed_s;
}

// One micro-batch on pipeline stage `stage`.
StageCost stage_cost(const Context& x, int stage) {
  StageCost s;
  const DeviceParams dev = x.device(stage);
  s.params = dev.total();
  s.expert_params = dev.experts;
  if (!x.m.has_architecture()) {
    assumed_compute(x, dev, s);
  } else {
    const BlockTime layer = stage_compute(x, stage, s);
    stage_model_parallel(x, stage, layer, s);
  }
  if (x.p.pp > 1) {
    // Each micro-batch sends its activation forward and its gradient back, once per chunk.
    s.pp_s =
        2.0 * x.p.interleave *
        collective_time(Collective::send_recv, x.cost.collectives.pp_bytes, x.at.pipeline, x.c);
  }
  if (x.p.zero >= 3) stage_zero3(x, stage, dev, s);
  return s;
}

// The first stage holds the embedding, the last the LM head; middle stages are alike. The
// slowest sets the pace.
struct Stages {
  StageCost first, middle, last;
  int critical = 0;  // 0 first, 1 middle, 2 last
  const StageCost& crit() const { return critical == 0 ? first : critical == 1 ? middle : last; }
  // The stage holding the most parameters (its gradient sync is the longest).
  const StageCost& heaviest() const {
    const StageCost* h = &first;
    for (const StageCost* s : {&middle, &last})
      if (s->params > h->params) h = s;
    return *h;
  }
  double params() const { return heaviest().params; }
};

Stages pipeline_stages(const Context& x) {
  const int pp = x.p.pp;
  Stages st;
  st.first = stage_cost(x, 0);
  st.last = pp > 1 ? stage_cost(x, pp - 1) : st.first;
  st.middle = pp > 2 ? stage_cost(x, 1) : st.first;
  // A MoE model whose first layers are dense: the middle stage with the most MoE layers, where
  // the experts' all-to-alls and weights are, if it costs more than the second.
  const int moe_stage = pp > 2 ? x.heaviest_moe_stage() : 0;
  if (moe_stage > 1 && moe_stage < pp - 1) {
    StageCost heavier = stage_cost(x, moe_stage);
    if (heavier.total() > st.middle.total()) st.middle = heavier;
  }
  const double f = st.first.total(), mid = st.middle.total(), l = st.last.total();
  st.critical = l > f && l > mid ? 2 : mid > f ? 1 : 0;
  return st;
}

// Compute, recompute and the bubble of the step: the critical stage's micro-batches and the
// schedule's fill and drain.
void pipeline_time(const Context& x, const Stages& st, StepTime& t) {
  const ParallelPlan& p = x.p;
  const int mb = t.micro_batches;
  t.critical_stage = st.critical == 0 ? 0 : st.critical == 2 ? p.pp - 1 : 1;
  t.compute_s = mb * st.crit().compute_s;
  t.recompute_s = mb * st.crit().recompute_s;
  t.first_stage = pass_times(st.first);
  t.middle_stage = pass_times(st.middle);
  t.last_stage = pass_times(st.last);
  t.first_work = stage_work(st.first);
  t.middle_work = stage_work(st.middle);
  t.last_work = stage_work(st.last);
  t.bubble_s = bubble_s(p, mean_passes(t, p.pp));
  t.schedule = schedule_name(p);
}

// The optimizer update: memory-bound passes over the `local` (ZeRO-sharded) parameters, on the
// CPU instead when the optimizer is offloaded (its time is then offload's).
void optimizer_time(const Context& x, double local, StepTime& t) {
  if (x.m.has_architecture()) {
    t.optimizer_s = local * optimizer_bytes_per_param(x.mem.per_param, x.tr) /
                    (x.c.gpu.hbm_bytes_per_s * x.c.gpu.memory_efficiency);
  } else {
    t.optimizer_in_mfu = true;  // folded into the assumed MFU
  }
}

// Model FLOPs plus the forward FLOPs recompute runs again.
double hardware_flops(const Context& x, double model_flops) {
  const ModelSpec& m = x.m;
  const TrainingSpec& tr = x.tr;
  if (!m.has_architecture()) return model_flops;
  const double recomputed =
      x.p.recompute == Recompute::full
          ? x.cost.forward_model_flops -
                2.0 * tr.global_batch * tr.seq_len * static_cast<double>(m.hidden) * m.vocab
      : x.p.recompute == Recompute::selective ? selective_recompute_flops(x)
                                              : 0.0;
  return model_flops + recomputed;
}

}  // namespace

MemoryFit evaluate_memory(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                          const ClusterSpec& c, const MemoryInputs& mem,
                          StageParamsMemo* stage_params) {
  MemoryFit fit;
  fit.peak_bytes = mem.activations_known || !m.has_architecture()
                       ? peak_memory_bytes(m, tr, p, c, mem, stage_params)
                       : 0;
  if (p.offload.any()) fit.host_fits = host_fits(m, tr, p, c, mem);
  return fit;
}

Evaluation evaluate(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                    const ClusterSpec& c, const MicroBatchCost& cost, const MemoryInputs& mem,
                    StageParamsMemo* stage_params) {
  Evaluation ev = evaluate_time(m, tr, p, c, cost, mem, stage_params);
  const MemoryFit fit = evaluate_memory(m, tr, p, c, mem, stage_params);
  ev.peak_bytes = fit.peak_bytes;
  ev.host_fits = fit.host_fits;
  return ev;
}

Evaluation evaluate_time(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                         const ClusterSpec& c, const MicroBatchCost& cost, const MemoryInputs& mem,
                         StageParamsMemo* stage_params) {
  const int mb = std::max(1, micro_batches_per_step(tr, p));
  const Context x{m, tr, p, c, cost, mem, placements_of(p, c), mb, stage_params};
  Evaluation ev;
  StepTime& t = ev.time;
  t.micro_batches = mb;
  ev.model_flops = 3.0 * cost.forward_model_flops;

  const Stages stages = pipeline_stages(x);
  pipeline_time(x, stages, t);
  const TrafficInputs traffic{.training = tr,
                              .plan = p,
                              .cluster = c,
                              .at = x.at,
                              .per_param = mem.per_param,
                              .micro_batches = mb,
                              .deferred_sync = deferred_sync(x),
                              .layers_known = m.has_architecture(),
                              .layer = cost.collectives};
  ev.comm = step_traffic(traffic, stages.crit(), stages.heaviest());
  // ZeRO-1+ updates the rank's shard: 1 / (shard group x cp) of the stage's parameters.
  const double shards = static_cast<double>(p.shard_degree()) * p.cp;
  const double local = p.zero >= 1 ? stages.params() / shards : stages.params();
  optimizer_time(x, local, t);

  t.exposed_comm_s = ev.comm.exposed_s();
  // Communication that hides behind compute still runs on the GPU's SMs and HBM: compute
  // beside it slows by the GPU profile's overlap_slowdown, for as long as the link is busy.
  t.contention_s = c.gpu.overlap_slowdown * ev.comm.hidden_link_s();
  t.compute_s += t.contention_s;
  if (p.offload.any()) {
    if (p.offload.optimizer) t.optimizer_s = 0;  // CPU Adam: in offload_s
    t.offload = offload_cost(m, p, c, mem, local, t);
    t.offload_s = t.offload.exposed_s;
  }
  t.step_s = t.compute_s + t.bubble_s + t.exposed_comm_s + t.optimizer_s + t.offload_s;
  ev.hardware_flops = hardware_flops(x, ev.model_flops);
  return ev;
}

Evaluation evaluate_time(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                         const ClusterSpec& c) {
  const MicroBatchCost cost = micro_batch_cost(m, tr, p, c);
  return evaluate_time(m, tr, p, c, cost, memory_inputs(m, tr, cost));
}

MemoryInputs memory_inputs(const ModelSpec& m, const TrainingSpec& tr, const MicroBatchCost& cost) {
  MemoryInputs in;
  in.per_param = state_bytes_per_param(m, tr);
  in.activations_known = m.has_architecture();
  in.activations = cost.activations;
  return in;
}

Estimate estimate(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                  const ClusterSpec& c, Simulation simulation) {
  Estimate est;
  est.params_only = !m.has_architecture();
  const MicroBatchCost cost = micro_batch_cost(m, tr, p, c);
  const MemoryInputs mem = memory_inputs(m, tr, cost);
  est.memory = estimate_memory(m, tr, p, c, mem);
  const Evaluation ev = evaluate(m, tr, p, c, cost, mem);
  est.comm = ev.comm;
  est.time = ev.time;
  if (m.has_architecture() && simulation != Simulation::skip)
    est.simulated = simulate_step(m, tr, p, c, ev.time, ev.comm, simulation == Simulation::run);
  Throughput& th = est.throughput;
  th.peak_flops = peak_flops(c.gpu, tr.recipe.gemm_dtype);
  th.model_flops = ev.model_flops;
  th.hardware_flops = ev.hardware_flops;
  est.step_simulated = est.simulated.ran && est.simulated.step_s > 0;
  est.step_s = est.step_simulated ? est.simulated.step_s : est.time.step_s;
  const double step = est.step_s;
  th.tokens_per_s = static_cast<double>(tr.global_batch) * tr.seq_len / step;
  th.tflops_per_gpu = ev.model_flops / (step * c.gpus) / 1e12;
  th.mfu = ev.model_flops / (step * c.gpus * th.peak_flops);
  th.hfu = ev.hardware_flops / (step * c.gpus * th.peak_flops);
  est.mfu_check = mfu_plausibility(th.mfu, tr, c);
  est.scope = plan_scope(m, tr, p, c);
  if (tr.tokens > 0) {
    const double steps = std::ceil(tr.tokens / (static_cast<double>(tr.global_batch) * tr.seq_len));
    est.train_s = steps * step;
    est.train_gpu_hours = est.train_s * c.gpus / 3600.0;
    est.train_cost = est.train_gpu_hours * tr.gpu_hour_cost;
  }
  return est;
}

}  // namespace shardplan
