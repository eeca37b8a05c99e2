// The plan search: axes declared once, their product enumerated in a fixed order, the costly
// part of each point (one micro-batch's op list and timings) computed once per (tp, cp, ep,
// sequence parallel, micro-batch) and shared by every (pp, interleave, ZeRO, recompute) under
// it, so each point costs one evaluate() of plain arithmetic: its memory first, and its step
// only when it fits (or breaks a tie for the plan closest to fitting). Work is split across
// threads by those groups; results merge in a deterministic order.
#include "shardplan/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <tuple>
#include <utility>

#include "shardplan/error.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/parallel.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

const char* to_string(Objective o) {
  switch (o) {
    case Objective::time:
      return "time";
    case Objective::cost:
      return "cost";
    case Objective::throughput:
      return "throughput";
  }
  return "";
}

Objective parse_objective(const std::string& text, const std::string& field) {
  if (text == "time") return Objective::time;
  if (text == "cost") return Objective::cost;
  if (text == "throughput") return Objective::throughput;
  throw InputError(field, "'" + text + "' is not one of: time, cost, throughput");
}

long long SearchSpace::size() const {
  // (tp, expert tp) pairs: an explicit expert tp equal to tp is the pair with expert tp 0.
  long long tp_pairs = static_cast<long long>(tp.size()) * expert_tp.size();
  for (int t : tp) tp_pairs -= std::count(expert_tp.begin(), expert_tp.end(), t);
  return tp_pairs * pp.size() * cp.size() * ep.size() * zero.size() * micro_batch.size() *
         interleave.size() * recompute_points() * sequence_parallel.size() * schedule.size() *
         lighter_ends.size() * offload.size() * moe_a2a_overlap.size() * shard_gpus.size();
}

long long SearchSpace::recompute_points() const {
  long long n = 0;
  for (Recompute r : recompute)
    n += r == Recompute::selective ? static_cast<long long>(recompute_modules.size()) : 1;
  return n;
}

std::vector<unsigned> recompute_module_sets(const ModelSpec& m) {
  using RM = RecomputeModule;
  std::vector<unsigned> sets;
  const unsigned norms = bit(RM::layernorm);
  if (m.is_moe()) sets.push_back(norms | bit(RM::moe_act));
  if (m.is_mla()) sets.push_back(norms | bit(RM::mla_up_proj));
  if (m.is_moe() && m.is_mla()) sets.push_back(norms | bit(RM::mla_up_proj) | bit(RM::moe_act));
  return sets;
}

long long SearchSpace::refused_points() const {
  return std::accumulate(refused.begin(), refused.end(), 0LL);
}

std::vector<int> divisors(long long n, long long max) {
  std::vector<int> out;
  for (long long d = 1; d <= std::min(n, max); ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

namespace {

// Takes out the values of one axis that `out` says the framework cannot run, counting the
// points they held under `rule`.
template <typename T, typename Pred>
void drop(SearchSpace& s, std::vector<T>& axis, RuleId rule, Pred out) {
  const long long before = s.size();
  std::erase_if(axis, out);
  s.refused[static_cast<int>(rule)] += before - s.size();
}

}  // namespace

void restrict_to(SearchSpace& s, const ModelSpec& m, const TrainingSpec& tr) {
  using R = RuleId;
  const FrameworkCaps& caps = tr.framework.caps;
  const ContextParallel cp_kind = tr.context_parallel;
  drop(s, s.zero, R::framework_zero_stage, [&](int z) { return !caps.has_zero(z); });
  drop(s, s.tp, R::framework_tp, [&](int tp) { return tp > 1 && !caps.tensor_parallel; });
  drop(s, s.sequence_parallel, R::framework_sequence_parallel,
       [&](bool sp) { return sp && !caps.sequence_parallel; });
  drop(s, s.pp, R::framework_pp, [&](int pp) { return pp > 1 && caps.pipeline_schedules.empty(); });
  drop(s, s.interleave, R::framework_schedule,
       [&](int v) { return v > 1 && !caps.has_schedule(Schedule::interleaved); });
  // 1F1B stays: with pp 1 it is no pipeline at all; the rule table refuses the rest.
  drop(s, s.schedule, R::framework_schedule,
       [&](Schedule x) { return x != Schedule::one_f_one_b && !caps.has_schedule(x); });
  drop(s, s.lighter_ends, R::framework_stage_layout, [&](bool lighter) {
    return lighter && caps.stage_layout == FrameworkCaps::StageLayout::none;
  });
  drop(s, s.cp, R::framework_cp,
       [&](int cp) { return cp > 1 && !caps.has_context_parallel(cp_kind); });
  drop(s, s.ep, R::framework_ep,
       [&](int ep) { return ep > 1 && !caps.shards_experts_of(m.model_type); });
  drop(s, s.expert_tp, R::framework_ep, [&](int etp) { return etp > 0 && !caps.expert_parallel; });
  drop(s, s.moe_a2a_overlap, R::framework_moe_overlap,
       [&](bool overlap) { return overlap && !caps.moe_a2a_overlap; });
  drop(s, s.recompute_modules, R::framework_recompute_modules,
       [&](unsigned modules) { return modules != 0 && !caps.recompute_modules; });
  drop(s, s.shard_gpus, R::framework_hsdp,
       [&](int g) { return g > 0 && caps.hsdp_zero_stages.empty(); });
  const OffloadSupport allowed = offload_support(caps);
  drop(s, s.offload, R::offload_supported,
       [&](const Offload& o) { return offload_kind_problem(o, allowed) != OffloadProblem::none; });
}

SearchSpace all_axes(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& cluster,
                     const PlanRules& rules) {
  SearchSpace s;
  const int gpus = cluster.gpus;
  const int tp_max = rules.allow_tp_across_nodes ? gpus : cluster.domain_gpus();
  s.tp = divisors(gpus, tp_max);
  s.pp = m.has_architecture() ? divisors(gpus, m.layers) : std::vector<int>{1};
  // Context parallelism pays off only for long sequences (Llama 3 uses it from 128k; Megatron
  // recommends it past 8k); below that it only adds traffic.
  s.cp = tr.seq_len >= 8192 ? divisors(gpus, std::min(tr.seq_len / 4096, 16)) : std::vector<int>{1};
  s.ep = m.is_moe() ? divisors(m.experts, m.experts) : std::vector<int>{1};
  // Expert tp as tp, or 1: experts whole on each rank, spread by ep over the tp ranks too
  // (Megatron-Core's MoE parallel folding). These two are what every framework here with
  // expert parallel runs: Megatron-Core takes any degree whose ep x etp divides tp x dp x cp
  // (megatron/core/parallel_state.py, initialize_model_parallel), torchtitan only ETP = TP or
  // ETP = 1 (torchtitan/distributed/parallel_dims.py, ParallelDims._validate).
  s.expert_tp = m.is_moe() ? std::vector<int>{0, 1} : std::vector<int>{0};
  s.moe_a2a_overlap = m.is_moe() ? std::vector<bool>{false, true} : std::vector<bool>{false};
  s.zero = {0, 1, 2, 3};
  s.micro_batch = divisors(tr.global_batch, std::min(tr.global_batch, 64));
  s.interleave = m.has_architecture() ? divisors(m.layers, 8) : std::vector<int>{1};
  // Selective recompute redoes the core attention's softmax and dropout; fused (flash)
  // attention keeps none of those tensors, so there it frees nothing and is never better than
  // no recompute. Megatron-Core's module sets (a MoE, MLA) are tried as well; under flash
  // attention only they make selective recompute a plan of its own.
  s.recompute =
      tr.attention == AttentionKind::flash
          ? std::vector<Recompute>{Recompute::none, Recompute::full}
          : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full};
  const std::vector<unsigned> module_sets = recompute_module_sets(m);
  if (!module_sets.empty()) {
    s.recompute = {Recompute::none, Recompute::selective, Recompute::full};
    if (tr.attention == AttentionKind::flash) s.recompute_modules.clear();
    s.recompute_modules.insert(s.recompute_modules.end(), module_sets.begin(), module_sets.end());
  }
  s.sequence_parallel = {false, true};
  s.schedule.clear();
  for (const ScheduleRow& r : schedule_rows()) {
    if (r.searched) s.schedule.push_back(r.id);
  }
  s.lighter_ends = m.has_architecture() ? std::vector<bool>{false, true} : std::vector<bool>{false};
  // Shard groups the size of the NVLink domain and of the host, where they are smaller than the
  // cluster: FSDP's HYBRID_SHARD default (shard inside a node, PyTorch ShardingStrategy docs).
  for (int g : {cluster.domain_gpus(), cluster.gpus_per_node}) {
    if (g > 1 && g < gpus &&
        std::find(s.shard_gpus.begin(), s.shard_gpus.end(), g) == s.shard_gpus.end())
      s.shard_gpus.push_back(g);
  }
  return s;
}

SearchSpace full_space(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& cluster,
                       const PlanRules& rules) {
  SearchSpace s = all_axes(m, tr, cluster, rules);
  restrict_to(s, m, tr);
  return s;
}

// ZeRO-1 and ZeRO-3 on one GPU price 311.72121027210846 s against ...784 s: the same plan.
double objective_key(double v) {
  return round_significant(v, 12);
}

namespace {

using Key = std::tuple<double, int, int, int, int, int, int, int, int, int, int, int, int, int, int,
                       int, int>;

int offload_code(const Offload& o) {
  return (o.optimizer ? 1 : 0) | (o.params ? 2 : 0) | (o.activations ? 4 : 0) |
         (o.to == OffloadTarget::nvme ? 8 : 0) | (o.activation_layers << 4);
}

Key key_of(const Candidate& cand) {
  const ParallelPlan& p = cand.plan;
  return {objective_key(cand.objective),
          p.tp,
          p.pp,
          p.cp,
          p.ep,
          p.etp,
          p.zero,
          p.micro_batch,
          static_cast<int>(p.recompute),
          p.sequence_parallel ? 1 : 0,
          p.interleave,
          static_cast<int>(p.schedule),
          p.first_stage_layers,
          offload_code(p.offload),
          p.moe_a2a_overlap ? 1 : 0,
          p.dp_shard,
          static_cast<int>(p.recompute_modules)};
}

struct Worse {
  bool operator()(const Candidate& a, const Candidate& b) const { return key_of(a) < key_of(b); }
};

// One per thread, cache-line aligned so that threads never share a line.
struct alignas(64) Partial {
  long long evaluated = 0, modelled = 0, feasible = 0;
  std::array<long long, kRules> rejected{};
  long long rejected_memory = 0;
  // The best top_k so far: a plain list until it holds top_k, then a heap with the worst on
  // top (an unbounded top_k, as plan_cluster asks, never pays for the heap).
  std::vector<Candidate> top;
  bool heap = false;
  bool have_least = false;
  Candidate least;
  std::vector<Candidate> over;  // SearchOptions::keep_over_memory
};

// The degrees one micro-batch's op list and timings depend on: shared by every point under it.
struct Group {
  int tp, cp, ep, etp, micro_batch;
  bool sp;
};

double objective_of(Objective o, const Candidate& cand, int gpus) {
  switch (o) {
    case Objective::time:
      return cand.step_s;
    case Objective::cost:
      return cand.step_s * gpus;  // GPU-seconds per step
    case Objective::throughput:
      return -cand.tokens_per_s;
  }
  return cand.step_s;
}

// The figures of a candidate from its evaluation (its peak is set before: evaluate_memory).
void set_step(Candidate& cand, const Evaluation& ev, const TrainingSpec& tr, Objective objective,
              int gpus) {
  cand.step_s = ev.time.step_s;
  cand.exposed_comm_s = ev.time.exposed_comm_s;
  cand.tokens_per_s = static_cast<double>(tr.global_batch) * tr.seq_len / ev.time.step_s;
  cand.objective = objective_of(objective, cand, gpus);
  cand.priced = true;
}

// The plan that comes closer to fitting: less peak memory, ties broken as the ranking does
// (its key reads the step: both plans priced).
bool closer_to_fitting(const Candidate& a, const Candidate& b) {
  return a.peak_bytes < b.peak_bytes || (a.peak_bytes == b.peak_bytes && key_of(a) < key_of(b));
}
// The same, where either may be a plan over memory the search left unpriced: `price` prices
// it when the peaks tie.
template <class Price>
bool closer_to_fitting(Candidate& a, Candidate& b, const Price& price) {
  if (a.peak_bytes == b.peak_bytes) {
    price(a);
    price(b);
  }
  return closer_to_fitting(std::as_const(a), std::as_const(b));
}

// Counts a plan that does not fit, kept as the closest to fitting where it is (priced then).
template <class Price>
void record_over(Candidate& cand, const SearchOptions& opt, Partial& out, const Price& price) {
  ++out.rejected_memory;
  if (!out.have_least || closer_to_fitting(cand, out.least, price)) {
    price(cand);
    out.least = cand;
    out.have_least = true;
  }
  if (opt.keep_over_memory) out.over.push_back(cand);
}

// Counts a plan that fits and keeps it among the top K.
void record(const Candidate& cand, const SearchOptions& opt, Partial& out) {
  ++out.feasible;
  if (static_cast<int>(out.top.size()) < opt.top_k) {
    out.top.push_back(cand);
    return;
  }
  if (!out.heap) {
    std::make_heap(out.top.begin(), out.top.end(), Worse{});
    out.heap = true;
  }
  if (key_of(cand) < key_of(out.top.front())) {
    std::pop_heap(out.top.begin(), out.top.end(), Worse{});
    out.top.back() = cand;
    std::push_heap(out.top.begin(), out.top.end(), Worse{});
  }
}

std::vector<std::pair<Schedule, bool>> pipeline_axes(const SearchSpace& space) {
  std::vector<std::pair<Schedule, bool>> out;
  for (Schedule s : space.schedule) {
    for (bool lighter : space.lighter_ends) out.emplace_back(s, lighter);
  }
  return out;
}

// What every point of a search reads, and the costs a group's points share (worked out at its
// first runnable point).
struct Walk {
  const ModelSpec& m;
  const TrainingSpec& tr;
  const ClusterSpec& cluster;
  const SearchSpace& space;
  const SearchOptions& opt;
  RuleContext rules;
};
struct GroupCost {
  bool ready = false;
  MicroBatchCost micro_batch;
  MemoryInputs memory;
};

// A group's costs per recompute module set: the micro-batch description resolves the plan's
// modules into what its ops save and rerun (layer.hpp), so each set has its own.
struct GroupCosts {
  int layout_broken = kRules;         // the group's first broken layout rule (first_broken_rule_of)
  StageParamsMemo* stages = nullptr;  // device_params of the pipeline being walked
  std::vector<std::pair<unsigned, GroupCost>> by_modules;
  GroupCost& of(unsigned modules) {
    for (auto& [m, cost] : by_modules)
      if (m == modules) return cost;
    return by_modules.emplace_back(modules, GroupCost{}).second;
  }
};

// One point: the rules (its group's layout rules, its pipeline's and its ZeRO stage's answered
// once before, `decided`), then the memory model and, where the step is needed, the step
// model, counted into `out`.
void visit(const ParallelPlan& p, const Walk& w, int decided, GroupCosts& costs, Partial& out) {
  ++out.evaluated;
  if (const auto broken = first_broken(p, w.rules, decided)) {
    ++out.rejected[static_cast<int>(*broken)];
    return;
  }
  GroupCost& shared = costs.of(p.recompute_modules);
  if (!shared.ready) {
    shared.micro_batch = micro_batch_cost(w.m, w.tr, p, w.cluster);
    shared.memory = memory_inputs(w.m, w.tr, shared.micro_batch);
    shared.ready = true;
  }
  ++out.modelled;
  const MemoryFit fit = evaluate_memory(w.m, w.tr, p, w.cluster, shared.memory, costs.stages);
  Candidate cand;
  cand.plan = p;
  cand.peak_bytes = fit.peak_bytes;
  cand.priced = false;
  auto price = [&](Candidate& c) {
    if (c.priced) return;
    const Evaluation ev = evaluate_time(w.m, w.tr, c.plan, w.cluster, shared.micro_batch,
                                        shared.memory, costs.stages);
    set_step(c, ev, w.tr, w.opt.objective, w.cluster.gpus);
  };
  if (fit.peak_bytes > w.cluster.usable_bytes() || !fit.host_fits) {
    record_over(cand, w.opt, out, price);
    return;
  }
  price(cand);
  record(cand, w.opt, out);
}

// The shard degree of a shard group spanning `gpus` GPUs (0: the whole data-parallel group);
// -1 when tp x cp does not divide them, which the rules refuse.
int shard_degree_over(int gpus, const ParallelPlan& p) {
  if (gpus == 0) return 0;
  const int inner = p.tp * p.cp;
  return gpus % inner == 0 ? gpus / inner : -1;
}

// A plan's last two axes: the EP all-to-all overlap and the hybrid-sharding group.
void visit_overlap_and_shards(ParallelPlan& p, const Walk& w, int decided, GroupCosts& shared,
                              Partial& out) {
  for (bool overlap : w.space.moe_a2a_overlap) {
    p.moe_a2a_overlap = overlap;
    for (int g : w.space.shard_gpus) {
      p.dp_shard = shard_degree_over(g, p);
      visit(p, w, decided, shared, out);
    }
  }
}

// The one module set of a recompute policy other than selective: the framework's own.
const std::vector<unsigned> kFrameworkRecompute = {0};

void run_group(const Group& g, const Walk& w, Partial& out) {
  const SearchSpace& space = w.space;
  const long long inner = static_cast<long long>(space.pp.size()) * space.interleave.size() *
                          space.zero.size() * space.recompute_points() * space.schedule.size() *
                          space.lighter_ends.size() * space.offload.size() *
                          space.moe_a2a_overlap.size() * space.shard_gpus.size();
  GroupCosts shared;
  StageParamsMemo stages(w.m);
  shared.stages = &stages;
  const ParallelPlan layout{.tp = g.tp,
                            .cp = g.cp,
                            .ep = g.ep,
                            .etp = g.etp,
                            .micro_batch = g.micro_batch,
                            .sequence_parallel = g.sp};
  shared.layout_broken = first_broken_rule_of(RuleScope::layout, layout, w.rules);
  const auto axes = pipeline_axes(space);
  // The points under one ZeRO stage of a pipeline (the loops below it), and the first rule
  // only a point answers.
  const long long under_zero = space.recompute_points() *
                               static_cast<long long>(space.offload.size()) *
                               space.moe_a2a_overlap.size() * space.shard_gpus.size();
  const int first_point = first_point_rule();
  for (int pp : space.pp) {
    if (w.cluster.gpus % (static_cast<long long>(g.tp) * pp * g.cp) != 0) {
      // No data-parallel degree makes these degrees multiply to the GPU count: every point
      // under this pp is a batch split that cannot exist.
      const long long n = inner / space.pp.size();
      out.evaluated += n;
      out.rejected[static_cast<int>(RuleId::gpu_count)] += n;
      continue;
    }
    for (int v : space.interleave) {
      for (const auto& [schedule, lighter] : axes) {
        // The pipeline's fields are set once here and its rules asked once: the loops below
        // change only ZeRO, recompute, offload, the all-to-all overlap and the shard group.
        ParallelPlan pipeline = plan_over(w.cluster.gpus, {.tp = g.tp,
                                                           .pp = pp,
                                                           .cp = g.cp,
                                                           .ep = g.ep,
                                                           .etp = g.etp,
                                                           .micro_batch = g.micro_batch,
                                                           .sequence_parallel = g.sp,
                                                           .interleave = v,
                                                           .schedule = schedule});
        if (lighter) set_lighter_ends(w.m.layers, pp * v, pipeline, w.m.mtp_layers);
        const int decided = std::min(shared.layout_broken,
                                     first_broken_rule_of(RuleScope::pipeline, pipeline, w.rules));
        ParallelPlan p = pipeline;
        for (int zero : space.zero) {
          p.zero = zero;
          const int zero_decided =
              std::min(decided, first_broken_rule_of(RuleScope::zero, p, w.rules));
          if (zero_decided < first_point) {
            // No point rule comes before the one this stage breaks: every point under it is
            // refused by that rule, counted here instead of visited.
            out.evaluated += under_zero;
            out.rejected[zero_decided] += under_zero;
            continue;
          }
          for (Recompute rc : space.recompute) {
            p.recompute = rc;
            for (const Offload& off : space.offload) {
              p.offload = off;
              for (unsigned modules :
                   rc == Recompute::selective ? space.recompute_modules : kFrameworkRecompute) {
                p.recompute_modules = modules;
                visit_overlap_and_shards(p, w, zero_decided, shared, out);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

void set_lighter_ends(int layers, int chunks, ParallelPlan& p, int mtp_layers) {
  if (mtp_layers > 0 && chunks >= 2) {
    // Each MTP module weighs two layers on the last chunk (its layer, and its own head and
    // loss), the loss one; the middle chunks take k layers each and the first the rest.
    // DeepSeek-V3's 61 layers on 16 chunks: 4 | 14 x 4 | 1 + MTP + loss, the layout
    // Megatron-Bridge's deepseek_v3.py sets for (PP, VP) = (16, 1) and (4, 4).
    const int k = (layers + 2 + 2 * mtp_layers) / chunks;
    p.last_stage_layers = std::max(0, k - 1 - 2 * mtp_layers);
    p.first_stage_layers = layers - p.last_stage_layers - (chunks - 2) * k;
    if (p.first_stage_layers < 0 || p.first_stage_layers > k + 1) p.first_stage_layers = layers + 1;
    return;
  }
  const int per_chunk = (layers + 2) / chunks;
  p.first_stage_layers = std::max(0, per_chunk - 1);
  p.last_stage_layers = std::max(0, per_chunk - 1);
  const bool same_as_even = p.interleave == 1 && layers % chunks == chunks - 2;
  if ((layers + 2) % chunks != 0 || chunks < 2 || same_as_even) p.first_stage_layers = layers + 1;
}

namespace {

template <class T>
bool has(const std::vector<T>& axis, const T& value) {
  return std::find(axis.begin(), axis.end(), value) != axis.end();
}

template <class T>
bool subset(const std::vector<T>& inner, const std::vector<T>& outer) {
  return std::all_of(inner.begin(), inner.end(), [&](const T& v) { return has(outer, v); });
}

auto offload_fields(const Offload& o) {
  return std::tie(o.optimizer, o.params, o.activations, o.to, o.activation_layers);
}

bool has_offload(const std::vector<Offload>& axis, const Offload& o) {
  return std::any_of(axis.begin(), axis.end(),
                     [&](const Offload& a) { return offload_fields(a) == offload_fields(o); });
}

}  // namespace

bool SearchSpace::holds(const ParallelPlan& p) const {
  // The degrees first: they tell most rungs apart.
  if (!(has(tp, p.tp) && has(pp, p.pp) && has(cp, p.cp) && has(ep, p.ep) && has(expert_tp, p.etp) &&
        has(zero, p.zero) && has(micro_batch, p.micro_batch) && has(interleave, p.interleave) &&
        has(schedule, p.schedule) && has(recompute, p.recompute) &&
        has(sequence_parallel, p.sequence_parallel) && has(moe_a2a_overlap, p.moe_a2a_overlap)))
    return false;
  // set_lighter_ends gives both ends a layer count; an even split leaves them at -1.
  const bool lighter = p.first_stage_layers != -1 || p.last_stage_layers != -1;
  const bool modules_ok = p.recompute == Recompute::selective
                              ? has(recompute_modules, p.recompute_modules)
                              : p.recompute_modules == 0;
  return has(lighter_ends, lighter) && modules_ok && has_offload(offload, p.offload) &&
         std::any_of(shard_gpus.begin(), shard_gpus.end(),
                     [&](int g) { return shard_degree_over(g, p) == p.dp_shard; });
}

bool SearchSpace::is_subspace_of(const SearchSpace& o) const {
  return subset(tp, o.tp) && subset(pp, o.pp) && subset(cp, o.cp) && subset(ep, o.ep) &&
         subset(expert_tp, o.expert_tp) && subset(zero, o.zero) &&
         subset(micro_batch, o.micro_batch) && subset(interleave, o.interleave) &&
         subset(schedule, o.schedule) && subset(lighter_ends, o.lighter_ends) &&
         subset(recompute, o.recompute) && subset(recompute_modules, o.recompute_modules) &&
         subset(sequence_parallel, o.sequence_parallel) &&
         std::all_of(offload.begin(), offload.end(),
                     [&](const Offload& x) { return has_offload(o.offload, x); }) &&
         subset(moe_a2a_overlap, o.moe_a2a_overlap) && subset(shard_gpus, o.shard_gpus);
}

void price(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& cluster,
           Objective objective, Candidate& cand) {
  if (cand.priced) return;
  set_step(cand, evaluate_time(m, tr, cand.plan, cluster), tr, objective, cluster.gpus);
}

SearchResult feasible_within(const SearchResult& every, const SearchSpace& sub, const ModelSpec& m,
                             const TrainingSpec& tr, const ClusterSpec& cluster,
                             Objective objective) {
  SearchResult r;
  r.evaluated = sub.size() + sub.refused_points();
  for (const Candidate& c : every.ranked) {
    if (sub.holds(c.plan)) r.ranked.push_back(c);
  }
  r.feasible = static_cast<long long>(r.ranked.size());
  auto priced = [&](Candidate& c) { price(m, tr, cluster, objective, c); };
  for (const Candidate& c : every.over_memory) {
    if (!sub.holds(c.plan)) continue;
    ++r.rejected_memory;
    // Only a plan with no more peak than the least so far can take its place: the rest are
    // not copied.
    if (r.have_least_memory && c.peak_bytes > r.least_memory.peak_bytes) continue;
    Candidate held = c;
    if (!r.have_least_memory || closer_to_fitting(held, r.least_memory, priced)) {
      r.least_memory = held;
      r.have_least_memory = true;
    }
  }
  if (r.have_least_memory) priced(r.least_memory);
  r.modelled = r.feasible + r.rejected_memory;
  return r;
}

namespace {

void append(std::vector<Candidate>& to, std::vector<Candidate>& from) {
  if (to.empty())
    to = std::move(from);
  else
    to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

SearchResult search(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& cluster,
                    const SearchSpace& space, const SearchOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Group> groups;
  for (int tp : space.tp) {
    for (int etp : space.expert_tp) {
      if (etp == tp) continue;  // the same plan as expert tp 0 (SearchSpace::size)
      for (int cp : space.cp) {
        for (int ep : space.ep) {
          for (bool sp : space.sequence_parallel) {
            for (int mb : space.micro_batch) groups.push_back({tp, cp, ep, etp, mb, sp});
          }
        }
      }
    }
  }
  std::vector<Partial> partials(static_cast<size_t>(thread_count(opt.threads)));
  const Walk walk{m, tr, cluster, space, opt, RuleContext{m, tr, cluster, opt.rules}};
  parallel_for(groups.size(), opt.threads,
               [&](size_t worker, size_t i) { run_group(groups[i], walk, partials[worker]); });

  // What restrict_to() took out counts as visited and refused by its rule.
  SearchResult r;
  r.evaluated = space.refused_points();
  r.rejected = space.refused;
  std::vector<Candidate> all;
  for (Partial& p : partials) {
    r.evaluated += p.evaluated;
    r.modelled += p.modelled;
    r.feasible += p.feasible;
    for (int i = 0; i < kRules; ++i) r.rejected[i] += p.rejected[i];
    r.rejected_memory += p.rejected_memory;
    // Moved, not copied, where nothing is there yet: tens of thousands of plans for a MoE model.
    append(r.over_memory, p.over);
    append(all, p.top);
    // Threads take groups in whatever order they finish, so the merge must use the same
    // order as record() for the answer not to depend on timing.
    if (p.have_least && (!r.have_least_memory || closer_to_fitting(p.least, r.least_memory))) {
      r.least_memory = p.least;
      r.have_least_memory = true;
    }
  }
  // Each plan's key worked out once (its objective rounded to 12 digits), not per comparison.
  std::vector<std::pair<Key, size_t>> keyed;
  keyed.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) keyed.emplace_back(key_of(all[i]), i);
  std::sort(keyed.begin(), keyed.end());
  const size_t kept = std::min(keyed.size(), static_cast<size_t>(std::max(0, opt.top_k)));
  r.ranked.reserve(kept);
  for (size_t i = 0; i < kept; ++i) r.ranked.push_back(all[keyed[i].second]);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardplan
