// The search's best plans ranked again by their simulated step.
#include "shardplan/rerank.hpp"

#include <algorithm>
#include <tuple>

#include "shardplan/memory.hpp"
#include "shardplan/parallel.hpp"
#include "shardplan/step_simulation.hpp"

namespace shardplan {

bool same_plan(const ParallelPlan& a, const ParallelPlan& b) {
  auto fields = [](const ParallelPlan& p) {
    return std::tie(p.dp, p.tp, p.pp, p.cp, p.ep, p.etp, p.zero, p.dp_shard, p.micro_batch,
                    p.recompute, p.sequence_parallel, p.interleave, p.schedule,
                    p.first_stage_layers, p.last_stage_layers, p.offload.optimizer,
                    p.offload.params, p.offload.activations, p.offload.to,
                    p.offload.activation_layers, p.moe_a2a_overlap, p.recompute_modules);
  };
  return fields(a) == fields(b);
}

const Estimate* SimulatedPlans::find(const ParallelPlan& plan) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [p, e] : held_) {
    if (same_plan(p, plan)) return &e;
  }
  return nullptr;
}

const Estimate& SimulatedPlans::add(const ParallelPlan& plan, Estimate e) {
  const std::lock_guard<std::mutex> lock(mutex_);
  // Another thread may have estimated the same plan meanwhile: the first one stays.
  for (const auto& [p, held] : held_) {
    if (same_plan(p, plan)) return held;
  }
  return held_.emplace_back(plan, std::move(e)).second;
}

int rerank_by_simulation(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c,
                         Objective objective, int k, std::vector<Candidate>& ranked, int threads,
                         std::vector<Estimate>* estimates, SimulatedPlans* simulated) {
  const int n = std::min(k, static_cast<int>(ranked.size()));
  if (estimates) estimates->clear();
  if (n <= 0 || !m.has_architecture()) return 0;
  std::vector<Estimate> kept(estimates ? static_cast<size_t>(n) : 0);
  parallel_for(static_cast<size_t>(n), threads, [&](size_t, size_t i) {
    Candidate& cand = ranked[i];
    double step_s = 0;
    if (simulated) {
      const Estimate& e = simulated->get(
          cand.plan, [&] { return estimate(m, tr, cand.plan, c, Simulation::figures); });
      if (e.step_simulated) step_s = e.simulated.step_s;
      if (estimates) kept[i] = e;
    } else if (estimates) {
      // The whole estimate, kept for the reports: the same simulation, with the memory
      // breakdown and the throughput beside it.
      kept[i] = estimate(m, tr, cand.plan, c, Simulation::figures);
      if (kept[i].step_simulated) step_s = kept[i].simulated.step_s;
    } else {
      // The simulation needs the step model's times and traffic, not the memory model.
      const Evaluation ev = evaluate_time(m, tr, cand.plan, c);
      const SimulatedStep sim = simulate_step(m, tr, cand.plan, c, ev.time, ev.comm, false);
      if (sim.ran && sim.step_s > 0) step_s = sim.step_s;
    }
    if (step_s <= 0) return;
    cand.step_s = step_s;
    cand.tokens_per_s = static_cast<double>(tr.global_batch) * tr.seq_len / step_s;
    // The search's objectives (search.cpp objective_of), on the simulated step.
    cand.objective = objective == Objective::time   ? cand.step_s
                     : objective == Objective::cost ? cand.step_s * c.gpus
                                                    : -cand.tokens_per_s;
  });
  // A stable sort of the first n by objective, applied to the estimates alike.
  std::vector<size_t> order(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return objective_key(ranked[a].objective) < objective_key(ranked[b].objective);
  });
  std::vector<Candidate> sorted;
  sorted.reserve(order.size());
  for (const size_t i : order) sorted.push_back(ranked[i]);
  std::copy(sorted.begin(), sorted.end(), ranked.begin());
  if (estimates) {
    estimates->reserve(order.size());
    for (const size_t i : order) estimates->push_back(std::move(kept[i]));
  }
  return n;
}

Rerank rerank(const ModelSpec& m, const TrainingSpec& tr, const ClusterSpec& c, Objective objective,
              const RerankRule& rule, long long candidates, std::vector<Candidate>& ranked,
              int threads, std::vector<Estimate>* estimates, SimulatedPlans* simulated) {
  Rerank r;
  r.rule = rule;
  r.candidates = candidates;
  if (estimates) estimates->clear();
  if (ranked.empty()) return r;
  r.closed_form_best = ranked.front();
  const double bound_s = ranked.front().step_s * (1 + rule.within);
  int k = 0;
  while (k < std::min(rule.at_most, static_cast<int>(ranked.size())) &&
         ranked[static_cast<size_t>(k)].step_s <= bound_s)
    ++k;
  std::vector<Candidate> before(ranked.begin(), ranked.begin() + k);
  r.simulated = rerank_by_simulation(m, tr, c, objective, k, ranked, threads, estimates, simulated);
  r.changed = !same_plan(ranked.front().plan, r.closed_form_best.plan);
  r.chosen_simulated_s = ranked.front().step_s;
  r.chosen_closed_form_s = r.closed_form_best.step_s;
  for (int i = 0; i < k; ++i) {
    if (same_plan(before[static_cast<size_t>(i)].plan, ranked.front().plan))
      r.chosen_closed_form_s = before[static_cast<size_t>(i)].step_s;
  }
  return r;
}

}  // namespace shardplan
