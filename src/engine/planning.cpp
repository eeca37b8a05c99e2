// The ladder and the search, run together with one set of rules (see planning.hpp).
#include "shardplan/planning.hpp"

#include <algorithm>

#include "shardplan/interval.hpp"
#include "shardplan/parallel.hpp"

namespace shardplan {

namespace {

// A shown plan reports its estimate's step (the simulated one), whether or not the re-rank that
// ranked it simulated it.
void report_estimate(Candidate& c, const Estimate& e) {
  c.step_s = e.step_s;
  c.tokens_per_s = e.throughput.tokens_per_s;
}

}  // namespace

void estimate_shown(PlanningResult& r, const ModelSpec& model, const TrainingSpec& training,
                    const ClusterSpec& cluster, int threads) {
  const RungVerdict* rec = r.recommended();
  const Candidate* fastest = r.fastest();
  r.recommended_estimate.reset();
  r.fastest_estimate.reset();
  // The reports show each plan's simulated figures, not its events (a trace simulates its plan
  // again), so that a long --top list does not hold every step's event list.
  auto estimated = [&](const ParallelPlan& plan) {
    auto make = [&] { return estimate(model, training, plan, cluster, Simulation::figures); };
    return r.simulated ? r.simulated->get(plan, make) : make();
  };
  if (rec) {
    r.recommended_estimate = estimated(rec->plan.plan);
    report_estimate(r.ladder.rungs[static_cast<size_t>(r.ladder.stop)].plan,
                    *r.recommended_estimate);
  }
  // The plans the re-rank simulated hold their estimates already (search_space): only the
  // rest are estimated here, so each shown plan is simulated once.
  const size_t kept = std::min(r.ranked_estimates.size(), r.found.ranked.size());
  r.ranked_estimates.resize(r.found.ranked.size());
  parallel_for(r.found.ranked.size() - kept, threads, [&](size_t, size_t j) {
    const size_t i = kept + j;
    r.ranked_estimates[i] = estimated(r.found.ranked[i].plan);
  });
  if (fastest) {  // the first ranked plan: its estimate is already in ranked_estimates
    r.fastest_estimate = r.ranked_estimates.front();
    report_estimate(r.found.ranked.front(), *r.fastest_estimate);
  }
  r.advantage_inside_interval = false;
  if (rec && fastest) {
    // The interval validation gives the recommended plan's step (validation.hpp).
    const StepInterval si = step_interval(training.framework, cluster.gpu, rec->plan.step_s,
                                          plan_scope(model, training, rec->plan.plan, cluster));
    r.advantage_inside_interval =
        si.accuracy && fastest->step_s < rec->plan.step_s && si.within(fastest->step_s);
  }
}

namespace {

// The re-rank of r.found (searched with at least the re-rank's plans kept) and the list cut to
// the plans asked for.
void rerank_found(PlanningResult& r, const ModelSpec& model, const TrainingSpec& training,
                  const ClusterSpec& cluster, const PlanningRequest& request) {
  SearchOptions so = request.search;
  so.top_k = std::max(so.top_k, request.rerank.at_most);
  if (static_cast<int>(r.found.ranked.size()) > so.top_k)
    r.found.ranked.resize(static_cast<size_t>(so.top_k));
  // The re-ranked plans' estimates go straight to ranked_estimates (estimate_shown adds the rest).
  r.rerank = rerank(model, training, cluster, so.objective, request.rerank, r.found.feasible,
                    r.found.ranked, so.threads, &r.ranked_estimates, r.simulated.get());
  if (static_cast<int>(r.found.ranked.size()) > request.search.top_k)
    r.found.ranked.resize(static_cast<size_t>(request.search.top_k));
  if (r.ranked_estimates.size() > r.found.ranked.size())
    r.ranked_estimates.resize(r.found.ranked.size());
}

}  // namespace

void search_space(PlanningResult& r, const ModelSpec& model, const TrainingSpec& training,
                  const ClusterSpec& cluster, const PlanningRequest& request) {
  SearchOptions so = request.search;
  so.top_k = std::max(so.top_k, request.rerank.at_most);
  r.found = search(model, training, cluster, r.space, so);
  rerank_found(r, model, training, cluster, request);
}

PlanningResult plan_cluster(const ModelSpec& model, const TrainingSpec& training,
                            const ClusterSpec& cluster, const PlanningRequest& request) {
  LadderOptions lo;
  lo.max_comm_share = request.max_comm_share;
  lo.rules = request.search.rules;
  lo.threads = request.search.threads;
  lo.rerank = request.rerank;
  PlanningResult r;
  r.simulated = std::make_shared<SimulatedPlans>();
  lo.simulated = r.simulated.get();
  r.space = full_space(model, training, cluster, request.search.rules);
  // One search that keeps every plan it models (79,000 plans of 120 bytes, 9.5 MB, for
  // DeepSeek-V3 on 64 H100s): the ladder's rungs lie in the full space, so each takes its plans
  // from it instead of searching its own space again. The rungs rank by step time: under another
  // objective the search's order is not theirs, so they search their own spaces and the full
  // search keeps only what the re-rank needs.
  const bool shared = request.search.objective == Objective::time;
  SearchOptions so = request.search;
  so.top_k = shared ? 1 << 30 : std::max(so.top_k, request.rerank.at_most);
  so.keep_over_memory = shared;
  r.found = search(model, training, cluster, r.space, so);
  if (shared) {
    lo.searched = &r.found;
    lo.searched_space = &r.space;
  }
  r.ladder = walk_ladder(model, training, cluster, lo);
  rerank_found(r, model, training, cluster, request);
  estimate_shown(r, model, training, cluster, request.search.threads);
  return r;
}

}  // namespace shardplan
