// Group placement on the cluster and the per-step size and time of each kind of traffic.
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

}  // namespace shardplan
