// One simulated training step as a timeline (Chrome Trace Event JSON, opened by Perfetto and
// chrome://tracing): the simulator's event list (simulate_events.hpp), a track per pipeline stage with
// each micro-batch's forward, backward (recompute first), weight-gradient and optimizer step,
// and a track per stage and communication stream with each collective where it ran.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

// The category, group and link are static names (string literals and the enums' to_string), so
// each event holds views of them, not copies: a 405B step's trace has 17,600 events.
struct TraceEvent {
  std::string name;
  std::string_view category;  // forward, backward, forward+backward (an F&B pair), recompute,
                              // weight-grad, comm, exposed, optimizer
  int process = 0;       // 1: pipeline stages, 2: communication of the slowest stage
  int track = 0;         // stage, or the communication stream
  double start_s = 0;
  double duration_s = 0;
  // args: what a collective moves and where, which micro-batch and model chunk a pass is
  double bytes = 0;
  std::string_view group;  // TP, CP ring, EP dispatch/combine, DP/FSDP ..., PP send/recv
  std::string_view link;   // scale-up, scale-out
  int micro_batch = -1;
  int chunk = -1;
};

struct Timeline {
  std::vector<TraceEvent> events;
  std::vector<std::string> stage_names, comm_names;
  double span_s = 0;  // = the estimate's step time
  int slowest_stage = 0;
};

/// The simulated step's events when the estimate has them (every model with an architecture).
/// Otherwise (parameters only) the step laid out from the estimate's own quantities: each stage
/// waits for the fill, runs its micro-batches in its schedule's order (warm-up forwards as many
/// as it holds in flight, then one backward and weight gradient per forward, GPipe all forwards
/// first), waits for the drain, then the exposed data-parallel traffic and the optimizer; the
/// slowest stage idles exactly the estimate's bubble and the last event ends at its step time.
Timeline build_timeline(const ParallelPlan& plan, const Estimate& estimate);

/// Chrome Trace Event JSON ("traceEvents", complete "X" events in microseconds, process and
/// thread names as "M" metadata events).
std::string trace_json(const Timeline& timeline, const std::string& title);

}  // namespace shardplan
