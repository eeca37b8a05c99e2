// A step's time in its parts (StepTime) and one stage's work per micro-batch (StageWork): what
// the closed forms (step_time.hpp) compute and the step simulator (step_simulation.hpp) lays
// out, in a header of their own so that the simulator does not depend on the closed forms.
#pragma once

#include "shardplan/offload.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {

/// One micro-batch's work on one pipeline stage (device) as the step simulator takes it
/// (step_simulation.hpp): the passes with the exposed part of their in-pass communication (TP,
/// CP, EP) in them, and what runs beside them or between them apart.
struct StageWork {
  double forward_s = 0, input_grad_s = 0, weight_grad_s = 0;  // F, B (recompute in it), W
  double recompute_s = 0;
  double ep_forward_s = 0, ep_backward_s = 0;  // all-to-alls inside forward_s / input_grad_s
  double tp_hidden_s = 0, cp_hidden_s = 0;     // beside the passes, forward and backward
  double layers = 0;
  double zero3_units = 0, zero3_gather_s = 0, zero3_reduce_s = 0;  // per unit
};

struct StepTime {
  double step_s = 0;          // = compute_s + bubble_s + exposed_comm_s + optimizer_s + offload_s
  double compute_s = 0;       // the slowest stage's forward, backward and recompute
  double bubble_s = 0;        // pipeline fill and drain of the plan's schedule (schedule.hpp)
  double exposed_comm_s = 0;  // communication no compute hides
  double optimizer_s = 0;     // the optimizer update (memory-bound); 0 when it runs on the CPU
  double offload_s = 0;       // what offload adds (= offload.exposed_s)
  OffloadTime offload;
  int micro_batches = 1;  // per pipeline per step (gradient accumulation steps)
  int critical_stage = 0;
  double recompute_s = 0;         // of compute_s, the recomputed forward
  double contention_s = 0;        // of compute_s, what overlapped communication takes from compute
  bool optimizer_in_mfu = false;  // params-only: the assumed MFU already covers the optimizer
  // One micro-batch's passes (exposed communication included) on the first device, a middle one
  // and the last: what the timeline (trace.hpp) lays out.
  PassTimes first_stage, middle_stage, last_stage;
  StageWork first_work, middle_work, last_work;  // the same stages, for the simulator
  const char* schedule = "1f1b";                 // the schedule's name (schedule_name)
};

}  // namespace shardplan
