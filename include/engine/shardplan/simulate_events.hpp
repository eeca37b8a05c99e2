// What the simulator reports: the streams and links a task runs on, the kinds of task, each
// task as an event, and each device's step split into compute, bubble and exposed
// communication. Apart from simulate.hpp (the inputs and the run) so that the engine's task
// graph (src/engine/simulate_graph.hpp) needs only these, not the simulator that drives it.
#pragma once

#include <array>
#include <vector>

namespace shardplan {

/// Where a task runs. Compute is the rank's one compute stream; each parallelism's
/// communication has its own stream, as NCCL communicators do.
enum class SimStream { compute, tp, cp, ep, dp_gather, dp_reduce, pp };
inline constexpr int kSimStreams = 7;
const char* to_string(SimStream stream);

/// The link a communication task crosses; a rank's transfers on one tier share its bandwidth
/// equally while they overlap.
enum class SimLink { none, scale_up, scale_out };
const char* to_string(SimLink link);

enum class SimTaskKind {
  forward,
  input_grad,   // B of a split backward
  weight_grad,  // W
  backward,     // B and W together
  overlapped,   // a forward and another micro-batch's full backward, their all-to-alls crossed
  optimizer,
  send,
  tp,
  cp,
  all_to_all,
  param_gather,
  grad_reduce
};
const char* to_string(SimTaskKind kind);

struct SimEvent {
  SimTaskKind kind = SimTaskKind::forward;
  SimStream stream = SimStream::compute;
  SimLink link = SimLink::none;
  int device = 0;
  int stage = -1;                      // virtual stage
  int micro_batch = -1;                // -1 for per-step work (optimizer, ZeRO-1/2 gathers)
  int stage2 = -1, micro_batch2 = -1;  // an overlapped pair's backward
  double start_s = 0, end_s = 0;
  double bytes = 0;
  double recompute_s = 0;  // of a backward, the recomputed forward drawn first
};

/// Where one device's step went: busy compute, idle waiting on another device's pass (the
/// bubble) and idle waiting on each communication stream (exposed), adding up to the step.
struct SimDevice {
  double compute_s = 0;  // passes, contention included
  double contention_s = 0;
  double optimizer_s = 0;
  double bubble_s = 0;
  std::array<double, kSimStreams> exposed_s{};
  double ep_in_passes_s = 0;  // of compute_s, all-to-all time no other pass hides
};

struct SimResult {
  double step_s = 0;
  int critical_device = 0;  // the device with the most compute
  std::vector<SimDevice> devices;
  std::vector<SimEvent> events;  // in order of start time, then task order
  bool deadlocked = false;       // the order waits on a pass it never issues (a bug, not a plan)
  int tasks = 0;
};

}  // namespace shardplan
