// The ladder walk: each rung is a search over its own shape (the knobs that are not new
// parallelisms -- micro-batch, recompute, sequence parallel -- stay free within a rung, as
// docs/design.md says), judged on memory first and then on how much of the step waits for the wire.
#include "shardplan/ladder.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

const char* to_string(Rung r) {
  switch (r) {
    case Rung::single_gpu:
      return "single-gpu";
    case Rung::gradient_accumulation:
      return "gradient-accumulation";
    case Rung::offload:
      return "offload";
    case Rung::zero_1:
      return "zero-1";
    case Rung::zero_2:
      return "zero-2";
    case Rung::zero_3:
      return "zero-3";
    case Rung::tensor_parallel:
      return "tensor-parallel";
    case Rung::pipeline_parallel:
      return "pipeline-parallel";
    case Rung::expert_parallel:
      return "expert-parallel";
  }
  return "";
}

const char* to_string(Blocker b) {
  switch (b) {
    case Blocker::none:
      return "none";
    case Blocker::no_valid_plan:
      return "no_valid_plan";
    case Blocker::gathered_layer:
      return "gathered_layer";
    case Blocker::optimizer_state:
      return "optimizer_state";
    case Blocker::weights:
      return "weights";
    case Blocker::model_states:
      return "model_states";
    case Blocker::activations:
      return "activations";
    case Blocker::communication:
      return "communication";
    case Blocker::host_memory:
      return "host_memory";
  }
  return "";
}

std::vector<Rung> ladder_order(const ModelSpec& m, int gpus) {
  std::vector<Rung> order = {Rung::single_gpu, Rung::gradient_accumulation};
  if (gpus == 1) order.push_back(Rung::offload);
  order.insert(order.end(), {Rung::zero_1, Rung::zero_2});
  if (m.is_moe()) order.push_back(Rung::expert_parallel);
  order.insert(order.end(), {Rung::zero_3, Rung::tensor_parallel, Rung::pipeline_parallel});
  return order;
}

SearchSpace rung_space(Rung rung, const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                       const PlanRules& rules) {
  // The rung's shape on every axis first, the framework's capabilities last: a rung the framework
  // cannot run (torchtitan's ZeRO-1) is then empty, its points refused under the rule that
  // says why.
  SearchSpace s = all_axes(m, tr, c, rules);
  s.cp = {1};
  s.ep = {1};
  s.expert_tp = {0};
  s.moe_a2a_overlap = {false};
  auto only = [](std::vector<int>& axis, int value) { axis = {value}; };
  const int per_replica =
      c.gpus > 0 && tr.global_batch % c.gpus == 0 ? tr.global_batch / c.gpus : 0;
  if (rung != Rung::pipeline_parallel && rung != Rung::expert_parallel) {
    // Without pipeline stages a schedule or a stage layout is no choice at all: every schedule
    // is the same plan on pp 1. Keeping that axis made its refusals (a framework without ZB-V)
    // outnumber the rung's real blocker and name it as the rung's reason.
    s.schedule = {Schedule::one_f_one_b};
    s.lighter_ends = {false};
  }
  switch (rung) {
    case Rung::single_gpu:
    case Rung::gradient_accumulation:
      only(s.tp, 1);
      only(s.pp, 1);
      only(s.zero, 0);
      only(s.interleave, 1);
      s.sequence_parallel = {false};
      // One GPU's work per data-parallel replica: the whole per-replica batch at once, or
      // accumulated over smaller micro-batches.
      if (rung == Rung::single_gpu) {
        s.micro_batch = per_replica > 0 ? std::vector<int>{per_replica} : std::vector<int>{};
      } else {
        std::erase_if(s.micro_batch, [&](int mb) { return mb >= per_replica; });
      }
      break;
    case Rung::offload:
      // ZeRO on one GPU shards nothing but is what DeepSpeed's offload runs under; the search
      // keeps the stages each offload allows (offload_problem).
      only(s.tp, 1);
      only(s.pp, 1);
      only(s.interleave, 1);
      s.sequence_parallel = {false};
      std::erase(s.zero, 0);
      s.offload = offload_choices();
      if (c.gpus != 1) s.tp.clear();  // with more GPUs, ZeRO shards first
      break;
    case Rung::zero_1:
    case Rung::zero_2:
    case Rung::zero_3:
      only(s.tp, 1);
      only(s.pp, 1);
      only(s.interleave, 1);
      s.sequence_parallel = {false};
      only(s.zero, rung == Rung::zero_1 ? 1 : rung == Rung::zero_2 ? 2 : 3);
      break;
    case Rung::tensor_parallel:
      // Inside a node, on the fastest links, with any ZeRO stage across the replicas.
      std::erase_if(s.tp, [&](int tp) { return tp < 2 || tp > c.domain_gpus(); });
      only(s.pp, 1);
      only(s.interleave, 1);
      break;
    case Rung::pipeline_parallel:
      std::erase_if(s.tp, [&](int tp) { return tp > c.domain_gpus(); });
      std::erase_if(s.pp, [](int pp) { return pp < 2; });
      break;
    case Rung::expert_parallel:
      // The axes all_axes gives a MoE model, ep 1 left out; tp inside the domain.
      s = all_axes(m, tr, c, rules);
      std::erase_if(s.tp, [&](int tp) { return tp > c.domain_gpus(); });
      std::erase_if(s.ep, [](int ep) { return ep < 2; });
      break;
  }
  restrict_to(s, m, tr);
  return s;
}

namespace {

// A rung's search: taken from the search the walk was given when the rung's space lies inside
// it, else searched here; and searched here when no plan of it passed the rules and `need_why`,
// for the rule that refused them.
SearchResult search_rung(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                         const SearchSpace& space, const LadderOptions& opt,
                         const SearchOptions& so, bool need_why) {
  if (opt.searched && opt.searched_space && space.is_subspace_of(*opt.searched_space)) {
    SearchResult r = feasible_within(*opt.searched, space, m, tr, c, so.objective);
    if (r.modelled > 0 || !need_why) return r;
  }
  return search(m, tr, c, space, so);
}

// Names what keeps the least-memory plan of a rung off the device.
void classify_memory(RungVerdict& v, const ModelSpec& m, const TrainingSpec& tr,
                     const ClusterSpec& c) {
  const ParallelPlan& p = v.plan.plan;
  const MemoryBreakdown mem = estimate_memory(m, tr, p, c);
  const StageMemory& s = mem.worst();
  const double cap = c.usable_bytes();
  v.memory_bytes = s.total_bytes();
  if (!mem.host_fits) {
    v.blocker = Blocker::host_memory;
    v.need_bytes = mem.host_bytes_per_node;
  } else if (p.zero >= 3 && s.gathered_layers_bytes / 2 > cap) {
    v.blocker = Blocker::gathered_layer;
    v.need_bytes = s.gathered_layers_bytes / 2;
  } else if (s.optimizer_bytes > cap) {
    v.blocker = Blocker::optimizer_state;
    v.need_bytes = s.optimizer_bytes;
  } else if (s.weights_bytes > cap) {
    v.blocker = Blocker::weights;
    v.need_bytes = s.weights_bytes;
  } else if (s.model_states_bytes() + s.overhead_bytes() - s.fragmentation_bytes > cap) {
    v.blocker = Blocker::model_states;
    v.need_bytes = s.model_states_bytes();
  } else {
    v.blocker = Blocker::activations;
    v.need_bytes = s.activations_bytes + s.transient_bytes();
  }
}

// Which rule refused most of the rung's plans. A framework capability (torchtitan has no ZeRO-1,
// no offload) is the answer only when the framework can run none of the rung's shape: otherwise
// the rule that broke the plans it can run is (a batch too small for the GPUs is that, however
// many ZB-V points a framework without ZB-V also drops).
std::optional<RuleId> top_rule(const SearchResult& r, const SearchSpace& space) {
  std::array<long long, kRules> runnable = r.rejected;
  for (int i = 0; i < kRules; ++i) runnable[i] -= space.refused[i];
  const std::array<long long, kRules>* const lists[] = {&runnable, &r.rejected};
  for (const auto* counts : lists) {
    const auto most = std::max_element(counts->begin(), counts->end());
    if (*most > 0) return static_cast<RuleId>(most - counts->begin());
  }
  return std::nullopt;
}

// What offload costs: its share of the step, and the same plan's step and memory without it.
void price_offload(RungVerdict& v, const Estimate& e, const ModelSpec& m, const TrainingSpec& tr,
                   const ClusterSpec& c) {
  v.offload_s = e.time.offload_s;
  ParallelPlan plain = v.plan.plan;
  plain.offload = Offload{};
  const Estimate without = estimate(m, tr, plain, c, Simulation::figures);
  v.without_offload_s = without.step_s;
  v.without_offload_bytes = without.memory.total_bytes();
}

// Traffic that leaves the scale-up domain runs on the NIC whether or not compute hides it.
bool leaves_domain(const CommBreakdown& cb) {
  return std::any_of(kTrafficKinds.begin(), kTrafficKinds.end(), [&](TrafficKind k) {
    return cb.of(k).present() && cb.of(k).placement.domains() > 1;
  });
}

// The fastest plan of a rung above the stop that passes, if it is `climb_speedup` times faster
// than the stop's: the walk then recommends it (the rungs between are not shown).
void climb(LadderResult& out, const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
           const LadderOptions& opt, const SearchOptions& so) {
  out.first_pass = out.stop;
  out.climb_speedup = opt.climb_speedup;
  const RungVerdict first = out.rungs[static_cast<size_t>(out.stop)];
  const std::vector<Rung> order = ladder_order(m, c.gpus);
  const auto above = std::find(order.begin(), order.end(), first.rung) + 1;
  for (auto it = above; it < order.end(); ++it) {
    const Rung rung = *it;
    const SearchSpace space = rung_space(rung, m, tr, c, opt.rules);
    if (space.size() == 0) continue;
    SearchResult r = search_rung(m, tr, c, space, opt, so, false);
    // A rung whose closed-form best is not near climb_speedup times faster cannot be climbed
    // to: the simulation moves a step by less than the re-rank's margin (RerankRule::within).
    const double stop_s = out.rungs[static_cast<size_t>(out.stop)].plan.step_s;
    if (r.ranked.empty() ||
        r.ranked.front().step_s * opt.climb_speedup > stop_s * (1 + opt.rerank.within))
      continue;
    rerank(m, tr, c, so.objective, opt.rerank, r.feasible, r.ranked, so.threads, nullptr,
           opt.simulated);
    // ranked is fastest first: the first plan the interconnect carries is the rung's pick.
    for (const Candidate& cand : r.ranked) {
      if (cand.exposed_comm_s / cand.step_s > opt.max_comm_share) continue;
      const double best_s = out.rungs[static_cast<size_t>(out.stop)].plan.step_s;
      if (cand.step_s * opt.climb_speedup <= best_s) {
        RungVerdict v;
        v.rung = rung;
        v.capacity_bytes = c.gpu.memory_bytes;
        v.evaluated = r.evaluated;
        v.fits = v.comm_ok = v.has_plan = true;
        v.plan = cand;
        v.memory_bytes = cand.peak_bytes;
        v.comm_share = cand.exposed_comm_s / cand.step_s;
        v.crosses_nodes = leaves_domain(estimate(m, tr, cand.plan, c, Simulation::skip).comm);
        out.rungs.push_back(v);
        out.stop = static_cast<int>(out.rungs.size()) - 1;
      }
      break;
    }
  }
}

}  // namespace

LadderResult walk_ladder(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                         const LadderOptions& opt) {
  LadderResult out;
  out.max_comm_share = opt.max_comm_share;
  SearchOptions so;
  so.rules = opt.rules;
  so.threads = opt.threads;
  so.top_k = 1 << 30;  // a rung's space is small; keep every feasible plan to judge its traffic
  if (m.is_moe()) {
    const ParamCounts counts = count_params(m);
    out.moe_total_params = counts.total;
    out.moe_active_params = counts.active;
  }
  for (const Rung rung : ladder_order(m, c.gpus)) {
    RungVerdict v;
    v.rung = rung;
    v.capacity_bytes = c.gpu.memory_bytes;
    const SearchSpace space = rung_space(rung, m, tr, c, opt.rules);
    SearchResult r = search_rung(m, tr, c, space, opt, so, true);
    rerank(m, tr, c, so.objective, opt.rerank, r.feasible, r.ranked, so.threads, nullptr,
           opt.simulated);
    v.evaluated = r.evaluated;
    if (!r.ranked.empty()) {
      v.fits = true;
      // The fastest plan whose exposed traffic the interconnect carries; failing that, the one
      // that waits least.
      const Candidate* best_comm = nullptr;
      for (const Candidate& cand : r.ranked) {
        const double share = cand.exposed_comm_s / cand.step_s;
        if (share <= opt.max_comm_share) {
          v.plan = cand;
          v.comm_ok = true;
          break;
        }
        if (!best_comm || share < best_comm->exposed_comm_s / best_comm->step_s) best_comm = &cand;
      }
      if (!v.comm_ok) {
        v.plan = *best_comm;
        v.blocker = Blocker::communication;
      }
      v.has_plan = true;
      v.memory_bytes = v.plan.peak_bytes;
      v.comm_share = v.plan.exposed_comm_s / v.plan.step_s;
      // What crosses nodes and what offload costs are the closed forms' (the step's
      // communication and offload terms): no simulation is needed for them.
      const Estimate e = estimate(m, tr, v.plan.plan, c, Simulation::skip);
      v.crosses_nodes = leaves_domain(e.comm);
      if (v.plan.plan.offload.any()) price_offload(v, e, m, tr, c);
    } else if (r.have_least_memory) {
      v.has_plan = true;
      v.plan = r.least_memory;
      classify_memory(v, m, tr, c);
    } else {
      v.blocker = Blocker::no_valid_plan;
      v.top_rule = top_rule(r, space);
      v.batch_per_gpu = c.gpus > 0 ? static_cast<double>(tr.global_batch) / c.gpus : 0;
    }
    out.rungs.push_back(v);
    if (v.passes()) {
      out.stop = static_cast<int>(out.rungs.size()) - 1;
      break;
    }
  }
  if (out.stop >= 0 && opt.climb_speedup > 0) climb(out, m, tr, c, opt, so);
  return out;
}

}  // namespace shardplan
