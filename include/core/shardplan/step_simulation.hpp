// A plan's step through the simulator (simulate.hpp): its stages' passes, sends, data-parallel
// buckets and ZeRO-3 units from the step model's own figures (step_time.hpp), laid out in the
// plan's schedule and run.
#pragma once

#include <vector>

#include "shardplan/search.hpp"
#include "shardplan/simulate.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// The schedule's issue order: 1F1B with virtual stages is Megatron-Core's interleaved order.
SimOrder sim_order(const ParallelPlan& plan);

/// The simulator's input for a plan from its evaluation (evaluate() or estimate()).
SimInput step_sim_input(const ModelSpec& model, const TrainingSpec& training,
                        const ParallelPlan& plan, const ClusterSpec& cluster, const StepTime& time,
                        const CommBreakdown& comm);

/// The simulated step; `events` keeps the event list (the trace).
SimulatedStep simulate_step(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelPlan& plan, const ClusterSpec& cluster,
                            const StepTime& time, const CommBreakdown& comm, bool events);

/// The search's ranking with its first `k` candidates ranked again by their simulated step:
/// the closed forms are the search's fast bound over millions of plans, the simulation decides
/// among the best. Their step_s, tokens_per_s and objective become the simulated ones. Returns
/// how many were simulated.
int rerank_by_simulation(const ModelSpec& model, const TrainingSpec& training,
                         const ClusterSpec& cluster, Objective objective, int k,
                         std::vector<Candidate>& ranked);

}  // namespace shardplan
