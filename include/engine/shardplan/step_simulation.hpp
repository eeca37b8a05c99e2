// A plan's step through the simulator (simulate.hpp): its stages' passes, sends, data-parallel
// buckets and ZeRO-3 units from the step model's own figures (step_time.hpp), laid out in the
// plan's schedule and run.
#pragma once

#include <vector>

#include "shardplan/comm.hpp"
#include "shardplan/simulate.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_parts.hpp"

namespace shardplan {

/// The schedule's issue order: 1F1B with virtual stages is Megatron-Core's interleaved order.
SimOrder sim_order(const ParallelPlan& plan);

/// Whether the simulator pairs the plan's forward and backward passes (SimInput::pair_passes):
/// the plan overlaps its EP all-to-alls (ParallelPlan::moe_a2a_overlap) under a framework that
/// runs the overlap on its schedule (FrameworkCaps::moe_a2a_overlap, moe_a2a_overlap_schedules),
/// and the schedule pairs passes: DualPipe-V's F&B chunks, Megatron-Core's combined 1F1B
/// (interleaved, or no pipeline: schedules.py forward_backward_no_pipelining calls
/// combined_1f1b_schedule_for_no_pipelining), two micro-batches at least.
bool sim_pairs_passes(const TrainingSpec& training, const ParallelPlan& plan, int micro_batches);

/// The simulator's input for a plan from its evaluation (evaluate() or estimate()).
SimInput step_sim_input(const ModelSpec& model, const TrainingSpec& training,
                        const ParallelPlan& plan, const ClusterSpec& cluster, const StepTime& time,
                        const CommBreakdown& comm);

/// The simulated step; `events` keeps the event list (the trace).
SimulatedStep simulate_step(const ModelSpec& model, const TrainingSpec& training,
                            const ParallelPlan& plan, const ClusterSpec& cluster,
                            const StepTime& time, const CommBreakdown& comm, bool events);

}  // namespace shardplan
