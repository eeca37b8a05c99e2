// Group placement on the cluster and the per-step size and time of each kind of traffic: the
// step's traffic table, priced from the stage costs of the step model (step_time.cpp).
#include "shardplan/comm.hpp"

#include <algorithm>
#include <utility>

namespace shardplan {

const char* json_name(Parallelism p) {
  switch (p) {
    case Parallelism::data:
      return "data_parallel";
    case Parallelism::tensor:
      return "tensor_parallel";
    case Parallelism::pipeline:
      return "pipeline_parallel";
    case Parallelism::context:
      return "context_parallel";
    case Parallelism::expert:
      return "expert_parallel";
  }
  return "";
}

namespace {

// `size` members whose consecutive members are `stride` ranks apart: min(size, tier / stride) of
// them share each tier of `tier_gpus` (1 when the stride spans a tier).
Placement place(int size, int stride, const ClusterSpec& c) {
  auto per_tier = [&](int tier_gpus) {
    return stride >= tier_gpus ? 1 : std::max(1, std::min(size, tier_gpus / stride));
  };
  Placement g;
  g.ranks = size;
  g.ranks_per_domain = per_tier(c.domain_gpus());
  g.ranks_per_host = per_tier(c.gpus_per_node);
  return g;
}

}  // namespace

Placement expert_data_placement(const ParallelPlan& p, const ClusterSpec& c) {
  // The ranks holding the same experts: tp x dp x cp / (ep x expert tp) of them, one expert
  // group (ep x expert tp ranks, expert tp innermost) apart (Megatron-Core's expert-data-
  // parallel group, parallel_state.py; torchtitan's dp_shard_mod_ep mesh). Under hybrid
  // sharding the experts shard within the shard group and are replicated across dp_replicate.
  const int etp = p.expert_tp();
  const int size = std::max(1, p.tp * p.shard_degree() * p.cp / std::max(1, p.ep * etp));
  return place(size, p.ep * etp, c);
}

Placement expert_tp_placement(const ParallelPlan& p, const ClusterSpec& c) {
  return place(p.expert_tp(), 1, c);
}

Placement placement_of(Parallelism which, const ParallelPlan& p, const ClusterSpec& c) {
  int size = 1, stride = 1;
  switch (which) {
    case Parallelism::tensor:
      size = p.tp;
      stride = 1;
      break;
    case Parallelism::context:
      size = p.cp;
      stride = p.tp;
      break;
    case Parallelism::expert:
      size = p.ep;
      // ep is carved out of dp; with an explicit expert tp Megatron-Core folds the expert ranks
      // (etp innermost, then ep) over tp x cp x dp, so ep neighbours are etp apart.
      stride = p.etp > 0 ? p.etp : p.tp * p.cp;
      break;
    case Parallelism::data:
      size = p.dp;
      stride = p.tp * p.cp;
      break;
    case Parallelism::pipeline:
      size = p.pp;
      stride = p.tp * p.cp * p.dp;
      break;
  }
  return place(size, stride, c);
}

// Under hybrid sharding the data-parallel rank index is replicate-major, shard-minor
// (torchtitan's mesh ["dp_replicate", "dp_shard", "cp", "tp"], parallel_dims.py): a shard group
// is dp_shard consecutive data-parallel ranks, its replicas dp_shard ranks apart.
Placement shard_placement(const ParallelPlan& p, const ClusterSpec& c) {
  return place(p.shard_degree(), p.tp * p.cp, c);
}
Placement replicate_placement(const ParallelPlan& p, const ClusterSpec& c) {
  return place(p.dp_replicate(), p.tp * p.cp * p.shard_degree(), c);
}

Placements placements_of(const ParallelPlan& p, const ClusterSpec& c) {
  return {placement_of(Parallelism::data, p, c),     placement_of(Parallelism::tensor, p, c),
          placement_of(Parallelism::pipeline, p, c), placement_of(Parallelism::context, p, c),
          placement_of(Parallelism::expert, p, c),   shard_placement(p, c),
          replicate_placement(p, c)};
}

void set_traffic(Traffic& t, Collective c, double bytes, double calls, const Placement& g,
                 const ClusterSpec& cluster) {
  t.collective = c;
  t.bytes = bytes;
  t.calls = calls;
  t.placement = g;
  t.call_s = collective_time(c, bytes, g, cluster);
  t.time_s = t.call_s * calls;
  t.link_s = t.time_s;
  t.wire_bytes = g.ranks > 1 ? calls * bytes * info(c).bus_factor(g.ranks) : 0;
}

Parallelism parallelism_of(TrafficKind k) {
  switch (k) {
    case TrafficKind::dp_grads:
    case TrafficKind::dp_params:
    case TrafficKind::dp_replicate:
      return Parallelism::data;
    case TrafficKind::tp:
      return Parallelism::tensor;
    case TrafficKind::pp:
      return Parallelism::pipeline;
    case TrafficKind::cp:
      return Parallelism::context;
    case TrafficKind::ep:
      return Parallelism::expert;
  }
  return Parallelism::data;
}

const char* describe(TrafficKind k) {
  switch (k) {
    case TrafficKind::dp_grads:
      return "data-parallel gradients";
    case TrafficKind::dp_params:
      return "data-parallel parameters";
    case TrafficKind::dp_replicate:
      return "data-parallel replicas";
    case TrafficKind::tp:
      return "tensor parallel";
    case TrafficKind::pp:
      return "pipeline parallel";
    case TrafficKind::cp:
      return "context parallel";
    case TrafficKind::ep:
      return "expert parallel";
  }
  return "";
}

const Traffic& CommBreakdown::of(TrafficKind k) const {
  switch (k) {
    case TrafficKind::dp_grads:
      return dp_grads;
    case TrafficKind::dp_params:
      return dp_params;
    case TrafficKind::dp_replicate:
      return dp_replicate;
    case TrafficKind::tp:
      return tp;
    case TrafficKind::pp:
      return pp;
    case TrafficKind::cp:
      return cp;
    case TrafficKind::ep:
      return ep;
  }
  return ep;
}

Traffic& CommBreakdown::of(TrafficKind k) {
  return const_cast<Traffic&>(std::as_const(*this).of(k));
}

namespace {

// `seconds` of every kind of traffic, added up.
template <class Seconds>
double sum_of(const CommBreakdown& c, Seconds seconds) {
  double s = 0;
  for (TrafficKind k : kTrafficKinds) s += seconds(c.of(k));
  return s;
}

}  // namespace

double CommBreakdown::exposed_s() const {
  return sum_of(*this, [](const Traffic& t) { return t.exposed_s; });
}

double CommBreakdown::time_s() const {
  return sum_of(*this, [](const Traffic& t) { return t.time_s; });
}

double CommBreakdown::hidden_link_s() const {
  return sum_of(*this, [](const Traffic& t) { return t.hidden_link_s(); });
}

Traffic CommBreakdown::total(Parallelism p) const {
  auto add = [](Traffic a, const Traffic& b) {
    if (!b.present()) return a;
    if (!a.present()) return b;
    a.time_s += b.time_s;
    a.link_s += b.link_s;
    a.exposed_s += b.exposed_s;
    a.wire_bytes += b.wire_bytes;
    a.calls += b.calls;
    return a;
  };
  // A parallelism of one kind returns that kind as it is, present or not.
  Traffic sum;
  bool first = true;
  for (TrafficKind k : kTrafficKinds) {
    if (parallelism_of(k) != p) continue;
    sum = first ? of(k) : add(sum, of(k));
    first = false;
  }
  return sum;
}

double replica_shard(const ParallelPlan& p, double dense, double experts, const Placement& edp) {
  return dense / p.shard_degree() + (edp.ranks > 0 ? experts / edp.ranks : 0.0);
}

bool reruns_all_to_alls(const ParallelPlan& p) {
  return p.recompute == Recompute::full || (recomputed_modules(p) & bit(RecomputeModule::moe)) != 0;
}

namespace {

// A row's calls at the time the step model gave each (set_traffic prices them at the link's
// busbw; the framework's `share` of it and the per-layer sums live in the stage cost): sets
// call_s and time_s, and link_s, the link busy for `share` of that time.
void price_calls(Traffic& t, double call_s, double share) {
  t.call_s = call_s;
  t.time_s = call_s * t.calls;
  t.link_s = t.time_s * share;
}

// ZeRO-0/1/2: the gradient all-reduce (or reduce-scatter, per micro-batch with ZeRO-2 unless
// deferred) and the updated weights' all-gather, bucketed under the backward and the next
// forward; under hybrid sharding in the shard group, each reduced shard then all-reduced across
// the replicas. A mixture of experts syncs its experts over their own expert-data-parallel group
// (Megatron-Core's expert_data_parallel_group; torchtitan's dp_shard_mod_ep mesh), and each
// replica holds the dense weights' 1/shard and the experts' 1/expert-data share.
void zero12_traffic(const TrafficInputs& in, const StageCost& crit, const StageCost& heaviest,
                    CommBreakdown& comm) {
  const ParallelPlan& p = in.plan;
  const TrainingSpec& tr = in.training;
  const ClusterSpec& c = in.cluster;
  const Placement& dp = in.at.shard;
  const Placement edp = expert_data_placement(p, c);
  const double experts = heaviest.expert_params, dense = heaviest.params - experts;
  const double g = in.per_param.gradients, w = in.per_param.gather;  // the recipe's
  // ZeRO-2 reduce-scatters each micro-batch, unless the sync is deferred to the last.
  const double calls = p.zero == 2 && !in.deferred_sync ? in.micro_batches : 1;
  const Collective grads = p.zero == 0 ? Collective::all_reduce : Collective::reduce_scatter;
  // The framework's gradient reductions reach this share of each group's busbw.
  const auto share = [&](const Placement& group) {
    return tr.framework.pricing.dp_busbw.at(group.ranks);
  };
  set_traffic(comm.dp_grads, grads, heaviest.params * g, calls, dp, c);
  price_calls(comm.dp_grads, dense_and_expert_s(grads, dense * g, experts * g, dp, edp, c, share),
              share(dp));
  Traffic& rep = comm.dp_replicate;
  if (in.at.replicate.ranks > 1) {
    set_traffic(rep, Collective::all_reduce, replica_shard(p, dense, experts, edp) * g, calls,
                in.at.replicate, c);
    const double rep_share = tr.framework.pricing.dp_busbw.at(in.at.replicate.ranks);
    rep.call_s /= rep_share;
    rep.time_s /= rep_share;
  }
  // Bucketed reduction overlaps the backward of the micro-batch that produced the gradients;
  // the all-reduce follows its reduce-scatter bucket by bucket. What the window leaves is split
  // between them by their times.
  const double window = crit.backward_s;
  const double call = comm.dp_grads.call_s + rep.call_s;
  const double exposed =
      !tr.overlap_grad_reduce ? calls * call : calls * std::max(0.0, call - window);
  const double rs_part = call > 0 ? comm.dp_grads.call_s / call : 1.0;
  comm.dp_grads.exposed_s = exposed * rs_part;
  rep.exposed_s = exposed * (1.0 - rs_part);
  if (p.zero >= 1) {
    set_traffic(comm.dp_params, Collective::all_gather, heaviest.params * w, 1, dp, c);
    const auto full_busbw = [](const Placement&) { return 1.0; };
    price_calls(
        comm.dp_params,
        dense_and_expert_s(Collective::all_gather, dense * w, experts * w, dp, edp, c, full_busbw),
        1.0);
    // Megatron-LM's --overlap-param-gather hides it behind the next step's forward.
    comm.dp_params.exposed_s = tr.overlap_param_gather
                                   ? std::max(0.0, comm.dp_params.call_s - crit.forward_s)
                                   : comm.dp_params.time_s;
  }
}

// ZeRO-3: the critical stage's per-unit gathers and reduce-scatters over the step (the
// reduce-scatters, and under hybrid sharding the all-reduces, once per step when deferred).
void zero3_traffic(const TrafficInputs& in, const StageCost& crit, CommBreakdown& comm) {
  const StateBytes& per = in.per_param;
  const Placement& dp = in.at.shard;
  const Placement& rep = in.at.replicate;
  const ClusterSpec& c = in.cluster;
  const int mb = in.micro_batches;
  const double units = crit.zero3_units;
  const double reducing = in.deferred_sync ? 1 : mb;  // backwards that reduce their gradients
  const double unit_grads = crit.params / units * per.gradients;
  // Gathers per step: each forward's (or only the first's) and each backward's unless kept.
  const Zero3Gathers gathers = zero3_gathers(in.training, in.plan);
  const double forwards = gathers.forward_share(mb) * mb;
  set_traffic(comm.dp_params, Collective::all_gather, crit.params / units * per.gather,
              units * (forwards + (gathers.backward ? mb : 0)), dp, c);
  set_traffic(comm.dp_grads, Collective::reduce_scatter, unit_grads, units * reducing, dp, c);
  // Each call as the stage cost priced it (the framework's share of busbw included), so that a
  // row's time is what its exposure was taken from.
  const BusbwShare& busbw = in.training.framework.pricing.zero3_busbw;
  const double share = busbw.at(dp.ranks, dp.domains());
  price_calls(comm.dp_params, crit.zero3_ag_s, share);
  price_calls(comm.dp_grads, crit.zero3_rs_s, share);
  if (rep.ranks > 1) {
    set_traffic(comm.dp_replicate, Collective::all_reduce, crit.zero3_ar_bytes, units * reducing,
                rep, c);
    price_calls(comm.dp_replicate, crit.zero3_ar_s, busbw.at(rep.ranks, rep.domains()));
  }
  // A reducing backward waits on gathers, reduce-scatters and all-reduces alike: its exposure
  // is split by their times; a deferring backward waits on gathers only.
  const double bwd_ag = gathers.backward ? crit.zero3_ag_s : 0.0;
  const double sum = std::max(1e-30, bwd_ag + crit.zero3_rs_s + crit.zero3_ar_s);
  const double reduce_exposed = reducing * crit.zero3_bwd_exposed_s;
  comm.dp_params.exposed_s = forwards * crit.zero3_fwd_exposed_s +
                             (mb - reducing) * crit.zero3_bwd_deferred_exposed_s +
                             reduce_exposed * bwd_ag / sum;
  comm.dp_grads.exposed_s = reduce_exposed * crit.zero3_rs_s / sum;
  comm.dp_replicate.exposed_s = reduce_exposed * crit.zero3_ar_s / sum;
}

// Tensor, pipeline, context and expert parallel traffic of the step, from the critical stage.
void model_parallel_traffic(const TrafficInputs& in, const StageCost& crit, CommBreakdown& comm) {
  const ParallelPlan& p = in.plan;
  const ClusterSpec& c = in.cluster;
  const Placements& at = in.at;
  const int mb = in.micro_batches;
  if (in.layers_known && p.tp > 1) {
    // Sequence parallel's all-gathers and reduce-scatters each move half an all-reduce.
    const Collective kind = p.sequence_parallel ? Collective::all_gather : Collective::all_reduce;
    set_traffic(comm.tp, kind, in.layer.tp_bytes, mb * crit.tp_calls, at.tensor, c);
    price_calls(comm.tp, comm.tp.calls > 0 ? mb * crit.tp_s / comm.tp.calls : 0,
                in.training.framework.pricing.tp_busbw.at(p.tp));
    comm.tp.exposed_s = mb * crit.tp_exposed_s;
  }
  if (p.pp > 1) {
    set_traffic(comm.pp, Collective::send_recv, in.layer.pp_bytes, 2.0 * p.interleave * mb,
                at.pipeline, c);
    comm.pp.exposed_s = mb * crit.pp_s;
  }
  if (p.cp > 1 && in.training.context_parallel == ContextParallel::ulysses) {
    // Four all-to-alls a layer each way (the forward's again under full recompute), at the
    // mean of their sizes; each call as the stage cost priced it.
    const double passes = p.recompute == Recompute::full ? 3.0 : 2.0;
    set_traffic(comm.cp, Collective::all_to_all, in.layer.cp_bytes / 4.0,
                mb * passes * 4.0 * crit.layers, at.context, c);
    price_calls(comm.cp, in.layer.cp_s / 4.0, 1.0);
    comm.cp.exposed_s = mb * crit.cp_exposed_s;
  } else if (p.cp > 1) {
    set_traffic(comm.cp, Collective::send_recv, in.layer.cp_bytes,
                mb * 3.0 * (p.cp - 1) * crit.layers, at.context, c);
    comm.cp.exposed_s = mb * crit.cp_exposed_s;
  }
  if (p.ep > 1 && in.layer.ep_bytes > 0) {
    // Dispatch and combine, forward and backward: four calls per MoE layer (six when its
    // forward is recomputed), each at the mean of the dispatch's and the combine's time (their
    // dtypes and routes may differ).
    const double calls = mb * (reruns_all_to_alls(p) ? 6.0 : 4.0) * crit.moe_layers;
    set_traffic(comm.ep, Collective::all_to_all, in.layer.ep_bytes, calls, at.expert, c);
    price_calls(comm.ep, in.layer.ep_s / 2.0, 1.0);
    comm.ep.exposed_s = mb * crit.ep_exposed_s;
  }
}

}  // namespace

CommBreakdown step_traffic(const TrafficInputs& in, const StageCost& critical,
                           const StageCost& heaviest) {
  CommBreakdown comm;
  // Data-parallel gradient sync and ZeRO parameter gathers, with replicas to sync.
  if (static_cast<double>(in.plan.dp) * in.plan.cp > 1) {
    if (in.plan.zero <= 2) zero12_traffic(in, critical, heaviest, comm);
    if (in.plan.zero == 3) zero3_traffic(in, critical, comm);
  }
  model_parallel_traffic(in, critical, comm);
  return comm;
}

}  // namespace shardplan
