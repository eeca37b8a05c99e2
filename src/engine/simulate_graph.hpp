// The simulator's task graph (internal to the engine): tasks on streams in issue order, the
// dependencies between them, and the event loop that runs them.
#pragma once

#include <utility>
#include <vector>

#include "shardplan/simulate_events.hpp"

namespace shardplan::sim {

struct Task {
  double duration_s = 0;
  double ready_s = 0, start_s = 0, end_s = 0;
  double contention_s = 0;  // what overlapped communication added to a compute task
  double remaining_s = 0;   // a transfer's seconds left at its link's full bandwidth
  SimEvent event;           // kind, stream, link, device, stage, micro-batch, bytes
  int next_in_stream = -1;
  int first_attached = -1;  // communication that starts with this pass
  int next_attached = -1;
  int host = -1;         // for an attached task: the pass it runs inside
  int released_by = -1;  // the dependency that finished last
  bool done = false;
};

struct Graph {
  std::vector<Task> tasks;
  // Per task, the dependencies not yet done (the stream's previous task included). Apart from
  // the tasks because releasing a successor touches only its count: a dense array of them stays
  // in cache where the tasks do not (the 405B pipeline step has 33k tasks of 144 bytes).
  std::vector<int> pending;
  std::vector<std::pair<int, int>> edges;  // (from, to)
  std::vector<int> last_in_stream;         // per device x stream
  int devices = 0;

  explicit Graph(int device_count);
  /// Empties the graph for `device_count` devices, keeping its storage (a simulation reuses the
  /// previous one's memory instead of faulting in fresh pages).
  void reset(int device_count);
  /// A task queued on its stream after the stream's previous one.
  int add(const SimEvent& what, double duration_s);
  /// A communication task that starts when `host` does, on its own stream, out of queue order.
  int attach(int host, const SimEvent& what, double duration_s);
  void depend(int from, int to);
};

/// Runs the graph to completion; returns false when some task never became ready.
bool run(Graph& g, double overlap_slowdown);

/// The step, each device's time split into compute, bubble and exposed communication, and the
/// events (when asked), from a graph that has run.
void account(const Graph& g, bool keep_events, SimResult& result);

}  // namespace shardplan::sim
