// Communication per step as text and JSON: each parallelism's collectives, the group and tier
// they run on, their time and the part compute does not hide (key names are the --json contract).
#include "shardplan/render_comm.hpp"

#include <fmt/format.h>

#include <vector>

#include "shardplan/collectives.hpp"
#include "shardplan/comm.hpp"
#include "shardplan/consistency.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"

namespace shardplan {
namespace {

std::string tier_of(const Traffic& t, const ClusterSpec& c) {
  if (!t.present()) return "-";
  return t.placement.domains() > 1
             ? (t.placement.ranks_per_domain > 1 ? c.intra.name + " + " + c.nic.name : c.nic.name)
             : c.intra.name;
}

// Nodes are hosts; on rack-scale systems the tier a group is priced on is the domain.
std::string group_text(const Placement& g) {
  if (g.hosts() <= 1) return fmt::format("{} GPUs in a node", g.ranks);
  if (g.ranks_per_domain == g.ranks_per_host) {
    return fmt::format("{} GPUs, {} nodes x {}", g.ranks, g.hosts(), g.ranks_per_host);
  }
  if (g.domains() <= 1) {
    return fmt::format("{} GPUs in one scale-up domain ({} nodes x {})", g.ranks, g.hosts(),
                       g.ranks_per_host);
  }
  return fmt::format("{} GPUs, {} scale-up domains x {}", g.ranks, g.domains(),
                     g.ranks_per_domain);
}

// Which figure of a link the model uses, and where it came from.
std::string describe_link(const std::string& where, const LinkSpec& l, const char* per) {
  if (l.user_given)
    return fmt::format("{} {}, {} {}, as typed", where, l.name, format_rate(l.busbw_bytes_per_s),
                       per);
  if (l.measured) {
    return fmt::format("{} {}: {} bus bandwidth {}, measured by shardplan probe", where, l.name,
                       format_rate(l.busbw_bytes_per_s), per);
  }
  return fmt::format("{} {}: {} bus bandwidth {} as nccl-tests measure it (nominal {})", where,
                     l.name, format_rate(l.busbw_bytes_per_s), per, format_rate(l.bytes_per_s));
}

struct Row {
  Parallelism parallelism;
  const Traffic* traffic;
  std::string what;
};

// The expert all-to-alls as the plan runs them: dtype, dispatcher and what hides them.
std::string expert_what(const ParallelPlan& p, const TrainingSpec& tr) {
  std::string what = fmt::format("token dispatch ({}) and combine ({}) all-to-alls",
                                 tr.moe_fp8_dispatch ? "fp8" : "16-bit", "16-bit");
  if (tr.moe_dispatcher == MoeDispatcher::deepep)
    what += ", one copy per token and remote node (DeepEP)";
  if (overlaps_all_to_all(p)) what += ", hidden behind paired forward and backward passes";
  if (tr.moe_max_load > 1) what += fmt::format(", busiest rank {:.2g}x its share", tr.moe_max_load);
  return what;
}

// A MoE's experts sync over their own group (step_time.cpp zero12_traffic, stage_zero3).
constexpr const char* kExpertsOwnGroup = "; the experts' over their expert-data-parallel group";

// What one kind of traffic carries under this plan, in words.
std::string words_of(TrafficKind k, const ParallelPlan& p, const TrainingSpec& tr) {
  const char* grad_dtype = tr.fp32_grads || tr.precision == Precision::fp32 ? "fp32" : "16-bit";
  // ZeRO-2/3 reduce every micro-batch unless the sync is deferred to the last (--grad-sync).
  const bool deferred = syncs_grads_once(tr, p);
  const char* when = deferred ? "once per step (deferred)" : "every micro-batch";
  switch (k) {
    case TrafficKind::dp_grads: {
      std::string what =
          p.zero == 0   ? fmt::format("{} gradient all-reduce, once per step", grad_dtype)
          : p.zero == 3 ? fmt::format("{} gradient reduce-scatter, {}", grad_dtype, when)
          : p.zero == 2 ? fmt::format("{} gradient reduce-scatter, {} (ZeRO-2)", grad_dtype, when)
                        : fmt::format("{} gradient reduce-scatter, once per step (ZeRO-1)",
                                      grad_dtype);
      if (p.hybrid_shard()) what += fmt::format(", inside shard groups of {}", p.shard_degree());
      if (p.ep > 1) what += kExpertsOwnGroup;
      return what;
    }
    case TrafficKind::dp_params: {
      if (p.zero != 3) {
        std::string what = "updated-weight all-gather after the optimizer step";
        if (p.ep > 1) what += kExpertsOwnGroup;
        return what;
      }
      const Zero3Gathers gathers = zero3_gathers(tr, p);
      std::string what =
          gathers.once_per_step
              ? "weight all-gathers, once per step, kept gathered until the last backward "
                "(ZeRO-3)"
          : !gathers.backward
              ? "weight all-gathers, every forward, kept gathered for its backward (ZeRO-3)"
              : "weight all-gathers, forward and backward of every micro-batch (ZeRO-3)";
      if (p.ep > 1) what += kExpertsOwnGroup;
      return what;
    }
    case TrafficKind::dp_replicate:
      return fmt::format("{} gradient-shard all-reduce across the {} replicas (HSDP), {}",
                         grad_dtype, p.dp_replicate(), p.zero >= 2 ? when : "once per step");
    case TrafficKind::tp:
      return p.sequence_parallel ? "activation all-gather / reduce-scatter pairs, every layer"
                                 : "activation all-reduces after each attention (or other mixer) "
                                   "and MLP, forward and backward";
    case TrafficKind::pp:
      return "boundary activations forward, their gradients back";
    case TrafficKind::cp:
      return tr.context_parallel == ContextParallel::ulysses
                 ? "q, k, v all-to-all to a head split and the output back (Ulysses), every "
                   "layer, forward and backward, not hidden"
                 : "K/V chunks around the ring, every layer";
    case TrafficKind::ep:
      return expert_what(p, tr);
  }
  return "";
}

std::vector<Row> rows_of(const CommBreakdown& comm, const ParallelPlan& p, const TrainingSpec& tr) {
  std::vector<Row> rows;
  for (TrafficKind k : kTrafficKinds) {
    const Traffic& t = comm.of(k);
    if (t.present()) rows.push_back({parallelism_of(k), &t, words_of(k, p, tr)});
  }
  return rows;
}

nlohmann::json traffic_json(const Traffic& t, const StepTime& s, const ClusterSpec& c,
                            const std::string& what) {
  return {{"present", t.present()},
          {"what", what},
          {"collective", t.present() ? info(t.collective).name : ""},
          {"bytes_per_call", t.bytes},
          {"calls_per_step", t.calls},
          {"bytes_per_step", t.wire_bytes},
          {"time_s", t.time_s},
          {"exposed_s", t.exposed_s},
          // One share everywhere (consistency.hpp): the exposed time over the step, as the step
          // table's exposed communication; the older key holds the same figure.
          {"share_of_step", share_of_step(t.exposed_s, s)},
          {"exposed_share_of_step", share_of_step(t.exposed_s, s)},
          {"tier", tier_of(t, c)},
          {"group",
           {{"ranks", t.placement.ranks},
            {"ranks_per_node", t.placement.ranks_per_host},
            {"nodes", t.placement.hosts()},
            {"ranks_per_domain", t.placement.ranks_per_domain},
            {"domains", t.placement.domains()}}},
          {"busbw_bytes_per_s", t.present() ? placement_busbw(t.collective, t.placement, c) : 0}};
}

}  // namespace

nlohmann::json to_json(const CommBreakdown& comm, const StepTime& s, const ParallelPlan& p,
                       const TrainingSpec& tr, const ClusterSpec& c) {
  nlohmann::json j = nlohmann::json::object();
  const auto rows = rows_of(comm, p, tr);
  for (int i = 0; i < kParallelisms; ++i) {
    const auto which = static_cast<Parallelism>(i);
    const Traffic total = comm.total(which);
    std::string what;
    nlohmann::json parts = nlohmann::json::array();
    for (const Row& r : rows) {
      if (r.parallelism != which) continue;
      what += (what.empty() ? "" : "; ") + r.what;
      parts.push_back(traffic_json(*r.traffic, s, c, r.what));
    }
    nlohmann::json entry = traffic_json(total, s, c, what);
    if (parts.size() > 1) {
      // A sum of collectives (ZeRO's reduce-scatter and all-gather): name them all, and leave
      // the one-call size to the parts, whose calls differ.
      std::string names;
      for (const auto& part : parts) {
        if (!names.empty()) names += '+';
        names += part["collective"].get<std::string>();
      }
      entry["collective"] = names;
      entry["bytes_per_call"] = nullptr;
      entry["parts"] = parts;
    }
    if (which == Parallelism::data || which == Parallelism::tensor ||
        which == Parallelism::pipeline || total.present()) {
      j[json_name(which)] = entry;
    }
  }
  return j;
}

std::string render_comm(const CommBreakdown& comm, const StepTime& s, const ParallelPlan& p,
                        const TrainingSpec& tr, const ClusterSpec& c) {
  const auto rows = rows_of(comm, p, tr);
  if (rows.empty()) return "Communication: none (a single GPU, nothing to synchronise)\n";
  Table t({{"parallelism", Table::Align::left},
           {"collective", Table::Align::left},
           {"group", Table::Align::left},
           {"tier", Table::Align::left},
           {"per call"},
           {"calls"},
           {"on the wire"},
           {"time"},
           {"exposed"},
           {"share of step"}});
  for (const Row& r : rows) {
    const Traffic& x = *r.traffic;
    t.add_row({json_name(r.parallelism), info(x.collective).name, group_text(x.placement),
               tier_of(x, c), format_bytes(x.bytes), fmt::format("{:g}", x.calls),
               format_bytes(x.wire_bytes), format_seconds(x.time_s), format_seconds(x.exposed_s),
               format_percent(share_of_step(x.exposed_s, s))});
  }
  std::string out = "Communication per step, per GPU\n" + t.render();
  for (const Row& r : rows) out += fmt::format("  {}: {}\n", json_name(r.parallelism), r.what);
  out +=
      "  'exposed' is what compute does not hide (bucketed gradient reduction under backward,\n"
      "  ZeRO-3 prefetch); share of step = exposed / step, so the rows add up to the step\n"
      "  table's exposed communication.\n";
  out += "Links: " + describe_link(c.rack_scale() ? fmt::format("inside a scale-up domain of {}",
                                                                c.domain_gpus())
                                                  : std::string("inside a node"),
                                   c.intra, "per GPU");
  if (c.domains() > 1) {
    out += "; " + describe_link(fmt::format("between nodes, {} per node", c.nics_per_node), c.nic,
                                "per NIC");
  }
  return out + "\n";
}

}  // namespace shardplan
