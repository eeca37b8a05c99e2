// The plan search: axes declared once, their product enumerated in a fixed order, the costly
// part of each point (one micro-batch's op list and timings) computed once per (tp, cp, ep,
// sequence parallel, micro-batch) and shared by every (pp, interleave, ZeRO, recompute) under
// it, so each point costs one evaluate() of plain arithmetic. Work is split across threads by
// those groups; results merge in a deterministic order.
#include "shardplan/search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <numeric>
#include <queue>
#include <thread>
#include <tuple>

#include "shardplan/error.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/model.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/step_time.hpp"

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
  return static_cast<long long>(tp.size()) * pp.size() * cp.size() * ep.size() * zero.size() *
         micro_batch.size() * interleave.size() * recompute.size() * sequence_parallel.size() *
         schedule.size() * lighter_ends.size() * offload.size();
}

namespace {

std::vector<int> divisors(long long n, long long max) {
  std::vector<int> out;
  for (long long d = 1; d <= std::min(n, max); ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

// Only what the framework can run: a point it cannot is not a plan for it.
void restrict_to(SearchSpace& s, const FrameworkCaps& caps) {
  std::erase_if(s.zero, [&](int z) { return !caps.has_zero(z); });
  if (!caps.tensor_parallel) s.tp = {1};
  if (!caps.sequence_parallel) s.sequence_parallel = {false};
  if (caps.pipeline_schedules.empty()) s.pp = {1};
  if (!caps.has_schedule(Schedule::interleaved)) s.interleave = {1};
  // 1F1B stays: with pp 1 it is no pipeline at all; the rule table refuses the rest.
  std::erase_if(s.schedule,
                [&](Schedule x) { return x != Schedule::one_f_one_b && !caps.has_schedule(x); });
  if (caps.stage_layout == FrameworkCaps::StageLayout::none) s.lighter_ends = {false};
  if (!caps.context_parallel) s.cp = {1};
  if (!caps.expert_parallel) s.ep = {1};
}

}  // namespace

SearchSpace full_space(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                       const PlanRules& rules) {
  SearchSpace s;
  const int tp_max = rules.allow_tp_across_nodes ? c.gpus : c.gpus_per_node;
  s.tp = divisors(c.gpus, tp_max);
  s.pp = m.has_architecture() ? divisors(c.gpus, m.layers) : std::vector<int>{1};
  // Context parallelism pays off only for long sequences (Llama 3 uses it from 128k; Megatron
  // recommends it past 8k); below that it only adds traffic.
  s.cp =
      tr.seq_len >= 8192 ? divisors(c.gpus, std::min(tr.seq_len / 4096, 16)) : std::vector<int>{1};
  s.ep = m.is_moe() ? divisors(m.experts, m.experts) : std::vector<int>{1};
  s.zero = {0, 1, 2, 3};
  s.micro_batch = divisors(tr.global_batch, std::min(tr.global_batch, 64));
  s.interleave = m.has_architecture() ? divisors(m.layers, 8) : std::vector<int>{1};
  // Selective recompute redoes the core attention's softmax and dropout; fused (flash)
  // attention keeps none of those tensors, so there it is the same plan as no recompute.
  s.recompute =
      tr.attention == AttentionKind::flash
          ? std::vector<Recompute>{Recompute::none, Recompute::full}
          : std::vector<Recompute>{Recompute::none, Recompute::selective, Recompute::full};
  s.sequence_parallel = {false, true};
  s.schedule = {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::zb_v, Schedule::dualpipe_v};
  s.lighter_ends = m.has_architecture() ? std::vector<bool>{false, true} : std::vector<bool>{false};
  restrict_to(s, tr.framework.caps);
  return s;
}

namespace {

using Key = std::tuple<double, int, int, int, int, int, int, int, int, int, int, int, int>;

int offload_code(const Offload& o) {
  return (o.optimizer ? 1 : 0) | (o.params ? 2 : 0) | (o.activations ? 4 : 0) |
         (o.to == OffloadTarget::nvme ? 8 : 0);
}

Key key_of(const Candidate& c) {
  const ParallelPlan& p = c.plan;
  return {c.objective,
          p.tp,
          p.pp,
          p.cp,
          p.ep,
          p.zero,
          p.micro_batch,
          static_cast<int>(p.recompute),
          p.sequence_parallel ? 1 : 0,
          p.interleave,
          static_cast<int>(p.schedule),
          p.first_stage_layers,
          offload_code(p.offload)};
}

struct Worse {
  bool operator()(const Candidate& a, const Candidate& b) const { return key_of(a) < key_of(b); }
};

// One per thread, cache-line aligned so that threads never share a line.
struct alignas(64) Partial {
  long long evaluated = 0, modelled = 0, feasible = 0;
  std::array<long long, kRules> rejected{};
  long long rejected_memory = 0;
  std::priority_queue<Candidate, std::vector<Candidate>, Worse> top;  // worst on top
  bool have_least = false;
  Candidate least;
};

struct Group {
  int tp, cp, ep, micro_batch;
  bool sp;
};

double objective_of(Objective o, const Candidate& c, int gpus) {
  switch (o) {
    case Objective::time:
      return c.step_s;
    case Objective::cost:
      return c.step_s * gpus;  // GPU-seconds per step
    case Objective::throughput:
      return -c.tokens_per_s;
  }
  return c.step_s;
}

// The plan that comes closer to fitting: less peak memory, ties broken as the ranking does.
bool closer_to_fitting(const Candidate& a, const Candidate& b) {
  return a.peak_bytes < b.peak_bytes || (a.peak_bytes == b.peak_bytes && key_of(a) < key_of(b));
}

// Counts a modelled plan and keeps it among the top K, or as the closest to fitting.
void record(const Candidate& cand, bool over_memory, const SearchOptions& opt, Partial& out) {
  if (over_memory) {
    ++out.rejected_memory;
    if (!out.have_least || closer_to_fitting(cand, out.least)) {
      out.least = cand;
      out.have_least = true;
    }
    return;
  }
  ++out.feasible;
  if (static_cast<int>(out.top.size()) < opt.top_k) {
    out.top.push(cand);
  } else if (key_of(cand) < key_of(out.top.top())) {
    out.top.pop();
    out.top.push(cand);
  }
}

std::vector<std::pair<Schedule, bool>> pipeline_axes(const SearchSpace& space) {
  std::vector<std::pair<Schedule, bool>> out;
  for (Schedule s : space.schedule) {
    for (bool lighter : space.lighter_ends) out.emplace_back(s, lighter);
  }
  return out;
}

void run_group(const Group& g, const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
               const SearchSpace& space, const SearchOptions& opt, Partial& out) {
  const long long inner = static_cast<long long>(space.pp.size()) * space.interleave.size() *
                          space.zero.size() * space.recompute.size() * space.schedule.size() *
                          space.lighter_ends.size() * space.offload.size();
  const RuleContext rules{m, tr, c, opt.rules};
  bool costed = false;
  MicroBatchCost cost;
  MemoryInputs mem;
  const double tokens = static_cast<double>(tr.global_batch) * tr.seq_len;
  const auto axes = pipeline_axes(space);
  for (int pp : space.pp) {
    const long long mp = static_cast<long long>(g.tp) * pp * g.cp;
    if (c.gpus % mp != 0) {
      // No data-parallel degree makes these degrees multiply to the GPU count: every point
      // under this pp is a batch split that cannot exist.
      const long long n = inner / space.pp.size();
      out.evaluated += n;
      out.rejected[static_cast<int>(RuleId::gpu_count)] += n;
      continue;
    }
    for (int v : space.interleave) {
      for (const auto& [schedule, lighter] : axes) {
        for (int zero : space.zero) {
          for (Recompute rc : space.recompute) {
            for (const Offload& off : space.offload) {
              ++out.evaluated;
              ParallelPlan p;
              p.schedule = schedule;
              p.tp = g.tp;
              p.cp = g.cp;
              p.ep = g.ep;
              p.sequence_parallel = g.sp;
              p.micro_batch = g.micro_batch;
              p.pp = pp;
              p.dp = static_cast<int>(c.gpus / mp);
              p.interleave = v;
              p.zero = zero;
              p.recompute = rc;
              p.offload = off;
              if (lighter) set_lighter_ends(m.layers, pp * v, p);
              if (const auto broken = first_broken(p, rules)) {
                ++out.rejected[static_cast<int>(*broken)];
                continue;
              }
              if (!costed) {
                cost = micro_batch_cost(m, tr, p, c);
                mem = memory_inputs(m, tr, cost);
                costed = true;
              }
              ++out.modelled;
              const Evaluation ev = evaluate(m, tr, p, c, cost, mem);
              Candidate cand;
              cand.plan = p;
              cand.step_s = ev.time.step_s;
              cand.peak_bytes = ev.peak_bytes;
              cand.exposed_comm_s = ev.time.exposed_comm_s;
              cand.tokens_per_s = tokens / ev.time.step_s;
              cand.objective = objective_of(opt.objective, cand, c.gpus);
              record(cand, ev.peak_bytes > c.gpu.memory_bytes || !ev.host_fits, opt, out);
            }
          }
        }
      }
    }
  }
}

}  // namespace

void set_lighter_ends(int layers, int chunks, ParallelPlan& p) {
  const int per_chunk = (layers + 2) / chunks;
  p.first_stage_layers = std::max(0, per_chunk - 1);
  p.last_stage_layers = std::max(0, per_chunk - 1);
  const bool same_as_even = p.interleave == 1 && layers % chunks == chunks - 2;
  if ((layers + 2) % chunks != 0 || chunks < 2 || same_as_even) p.first_stage_layers = layers + 1;
}

SearchResult search(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                    const SearchSpace& space, const SearchOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Group> groups;
  for (int tp : space.tp) {
    for (int cp : space.cp) {
      for (int ep : space.ep) {
        for (bool sp : space.sequence_parallel) {
          for (int mb : space.micro_batch) groups.push_back({tp, cp, ep, mb, sp});
        }
      }
    }
  }
  const int threads = std::max(
      1, opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<Partial> partials(static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  auto worker = [&](Partial& out) {
    for (size_t i = next++; i < groups.size(); i = next++)
      run_group(groups[i], m, tr, c, space, opt, out);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(worker, std::ref(partials[static_cast<size_t>(t)]));
  worker(partials[0]);
  for (auto& t : pool) t.join();

  SearchResult r;
  std::vector<Candidate> all;
  for (Partial& p : partials) {
    r.evaluated += p.evaluated;
    r.modelled += p.modelled;
    r.feasible += p.feasible;
    for (int i = 0; i < kRules; ++i) r.rejected[i] += p.rejected[i];
    r.rejected_memory += p.rejected_memory;
    while (!p.top.empty()) {
      all.push_back(p.top.top());
      p.top.pop();
    }
    // Threads take groups in whatever order they finish, so the merge must use the same
    // order as record() for the answer not to depend on timing.
    if (p.have_least && (!r.have_least_memory || closer_to_fitting(p.least, r.least_memory))) {
      r.least_memory = p.least;
      r.have_least_memory = true;
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Candidate& a, const Candidate& b) { return key_of(a) < key_of(b); });
  if (static_cast<int>(all.size()) > opt.top_k) all.resize(static_cast<size_t>(opt.top_k));
  r.ranked = std::move(all);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardplan
