// What each parallelism sends per training step: which collective, how big, how often, on
// which tier, and how long it takes there.
#pragma once

#include <array>

#include "shardplan/collectives.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_parts.hpp"

namespace shardplan {

enum class Parallelism { data, tensor, pipeline, context, expert };
inline constexpr int kParallelisms = 5;
/// JSON member names: data_parallel, tensor_parallel, pipeline_parallel, ...
const char* json_name(Parallelism p);

/// One kind of traffic in a step, per GPU.
struct Traffic {
  Collective collective = Collective::all_reduce;
  double bytes = 0;  // one call, in nccl-tests' size convention
  double calls = 0;  // per step
  Placement placement;
  double call_s = 0;      // one call
  double time_s = 0;      // all calls of a step
  double exposed_s = 0;   // the part compute does not hide
  double wire_bytes = 0;  // bytes this GPU sends per step: calls x bytes x bus factor
  // All calls at the link's busbw, before the framework's share of it: how long the link is
  // busy, which is what slows the compute beside it (time_s also holds the framework's hooks
  // and waits).
  double link_s = 0;
  /// Of the link's busy time, what runs hidden behind compute.
  double hidden_link_s() const { return time_s > 0 ? link_s * (1.0 - exposed_s / time_s) : 0; }
  bool present() const { return calls > 0 && bytes > 0 && placement.ranks > 1; }
};

/// The kinds of traffic a step sends, one per member of CommBreakdown, in its order. A new kind
/// is a member, a row here and a case in each switch over TrafficKind (-Wswitch names every
/// one left); the sums, the consistency checks and the reports iterate kTrafficKinds.
enum class TrafficKind { dp_grads, dp_params, dp_replicate, tp, pp, cp, ep };
inline constexpr std::array<TrafficKind, 7> kTrafficKinds = {
    TrafficKind::dp_grads, TrafficKind::dp_params, TrafficKind::dp_replicate, TrafficKind::tp,
    TrafficKind::pp,       TrafficKind::cp,        TrafficKind::ep};
/// The parallelism a kind belongs to: the gradient, weight and replica traffic are data's.
Parallelism parallelism_of(TrafficKind k);
/// What a kind carries, in words: "data-parallel gradients", "expert dispatch and combine".
const char* describe(TrafficKind k);

/// Per-step traffic of every parallelism; absent ones have calls == 0.
struct CommBreakdown {
  Traffic dp_grads;   // DDP all-reduce, ZeRO reduce-scatter of gradients
  Traffic dp_params;  // ZeRO-1/2 all-gather of updated weights; ZeRO-3 all-gathers of weights
  // Hybrid sharding: the all-reduce of each reduced gradient shard across the dp / dp_shard
  // replicas (after the reduce-scatter inside the shard group, which dp_grads prices).
  Traffic dp_replicate;
  Traffic tp;         // Megatron's per-layer all-reduces (all-gather + reduce-scatter with SP)
  Traffic pp;         // activations and their gradients at stage boundaries
  Traffic cp;         // ring attention: K/V chunks around the context-parallel group
  Traffic ep;         // expert dispatch and combine all-to-alls
  /// One kind's traffic.
  const Traffic& of(TrafficKind k) const;
  Traffic& of(TrafficKind k);
  double exposed_s() const;
  double time_s() const;
  double hidden_link_s() const;
  /// Sums of the traffic that belongs to one parallelism (data = grads + params + replicate).
  Traffic total(Parallelism p) const;
};

/// Megatron-LM's rank order (tp fastest, then cp, dp, pp): where each group's members sit.
/// A group of n with stride S puts min(n, G / S) members in each tier of G GPUs (1 when S is
/// at least G), for the scale-up domain and for the host.
Placement placement_of(Parallelism p, const ParallelPlan& plan, const ClusterSpec& cluster);

/// Every group of one plan placed at once, for a step model that prices them all.
struct Placements {
  Placement data, tensor, pipeline, context, expert;
  // ZeRO's groups: the ranks it shards over (the data-parallel group, or under hybrid sharding
  // its first dp_shard members) and the replicas of one shard (one rank per shard group).
  Placement shard, replicate;
};
/// The shard group of hybrid sharding: dp_shard data-parallel neighbours (the whole data-parallel
/// group without it); and the dp / dp_shard ranks, dp_shard apart, that hold the same shard.
Placement shard_placement(const ParallelPlan& plan, const ClusterSpec& cluster);
Placement replicate_placement(const ParallelPlan& plan, const ClusterSpec& cluster);
Placements placements_of(const ParallelPlan& plan, const ClusterSpec& cluster);
/// The expert-data-parallel group of a MoE plan: the ranks that hold the same experts, over which
/// ZeRO shards, gathers and reduces the expert weights.
Placement expert_data_placement(const ParallelPlan& plan, const ClusterSpec& cluster);
/// The expert-tensor-parallel group: expert tp consecutive ranks, innermost in Megatron-Core's
/// expert rank order (etp, ep, edp), so inside a node whenever etp fits in one.
Placement expert_tp_placement(const ParallelPlan& plan, const ClusterSpec& cluster);

/// Fills bytes, calls, placement, call_s, time_s, link_s and wire_bytes; exposure is the step
/// model's.
void set_traffic(Traffic& t, Collective c, double bytes, double calls, const Placement& g,
                 const ClusterSpec& cluster);

/// One data-parallel collective over a stage's dense weights in the shard group `shard` and
/// over its experts in their expert-data-parallel group `edp`: seconds, each part at
/// `share(group)` of that group's busbw (the framework's share, or 1).
template <typename Share>
double dense_and_expert_s(Collective kind, double dense_bytes, double expert_bytes,
                          const Placement& shard, const Placement& edp, const ClusterSpec& cluster,
                          Share share) {
  double s = collective_time(kind, dense_bytes, shard, cluster) / share(shard);
  if (expert_bytes > 0 && edp.ranks > 1)
    s += collective_time(kind, expert_bytes, edp, cluster) / share(edp);
  return s;
}

/// Under hybrid sharding, what each replica holds of a reduced gradient: the dense weights'
/// 1/shard and the experts' 1/expert-data-parallel group.
double replica_shard(const ParallelPlan& plan, double dense, double experts, const Placement& edp);

/// Whether recompute runs a MoE layer's forward, all-to-alls included, again before its
/// backward: full recompute, or Megatron-Core's moe module (a checkpointed MoE layer).
bool reruns_all_to_alls(const ParallelPlan& plan);

/// What sizes a step's traffic besides the stages' costs: the plan, its groups placed, the
/// recipe's bytes per parameter, and one micro-batch's per-layer collectives (step_time.hpp
/// MicroBatchCost, each per GPU in nccl-tests' size convention).
/// The collectives one micro-batch issues per layer (per stage boundary for the pipeline), sized
/// where the micro-batch is costed (step_time.hpp MicroBatchCost) and read by the step's
/// traffic table.
struct LayerCollectives {
  double tp_bytes = 0;  // one tensor-parallel collective (s * b * h activations)
  double pp_bytes = 0;  // one stage boundary's activation, per GPU
  double cp_bytes = 0;  // one layer's K/V ring (or Ulysses all-to-alls), forward
  double cp_s = 0;      // its time
  double ep_bytes = 0;  // one MoE layer's dispatch and combine, forward: mean size per call
  double ep_s = 0;      // their time
};

struct TrafficInputs {
  const TrainingSpec& training;
  const ParallelPlan& plan;
  const ClusterSpec& cluster;
  const Placements& at;
  const StateBytes& per_param;
  int micro_batches = 1;       // per step, per data-parallel replica
  bool deferred_sync = false;  // gradients reduced once, after the last micro-batch (memory.hpp)
  bool layers_known = true;    // the model's architecture, not only its parameter count
  LayerCollectives layer;      // per layer and micro-batch (MicroBatchCost::collectives)
};

/// The step's traffic table: every kind's collective, size and calls per step on the tier its
/// group spans, each call at the time the stage cost priced it and the part compute does not
/// hide. Data-parallel rows from `heaviest` (the stage with the most parameters: its sync is the
/// longest) and `critical` (the stage that sets the pace: its windows hide them); tensor,
/// pipeline, context and expert rows from `critical`.
CommBreakdown step_traffic(const TrafficInputs& in, const StageCost& critical,
                           const StageCost& heaviest);

}  // namespace shardplan
