// A step's time in its parts (StepTime), one stage's cost and work per micro-batch (StageCost,
// StageWork): what the closed forms (step_time.hpp) compute, the traffic table (comm.hpp) is
// sized from and the step simulator (step_simulation.hpp) lays out, in a header of their own so
// that neither depends on the closed forms.
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

/// One micro-batch on one pipeline stage as the closed forms price it (step_time.cpp): the
/// compute windows communication can hide behind, and each collective's time per call and
/// what of it is exposed. The step's traffic table (comm.hpp step_traffic) is sized from the
/// stage that sets the pace and the one with the most parameters.
struct StageCost {
  double compute_s = 0;  // forward + backward + recompute of one micro-batch
  double recompute_s = 0;
  double forward_s = 0;  // compute windows that communication can hide behind
  double backward_s = 0;
  double tp_s = 0, tp_exposed_s = 0, tp_calls = 0;
  double cp_s = 0, cp_exposed_s = 0;
  double ep_s = 0, ep_exposed_s = 0;
  double ep_recompute_s = 0;  // of ep_s, the forward's all-to-alls run again before backward
  double pp_s = 0;
  double zero3_exposed_s = 0;
  double zero3_units = 0, zero3_ag_s = 0, zero3_rs_s = 0;  // per call
  double zero3_ar_s = 0;  // hybrid sharding: a unit's gradient shard all-reduced across replicas
  double zero3_ar_bytes = 0;  // that shard: the dense weights' and the experts' parts
  // Exposed per pass: forward, a backward that reduces its gradients, one that defers them.
  double zero3_fwd_exposed_s = 0, zero3_bwd_exposed_s = 0, zero3_bwd_deferred_exposed_s = 0;
  double params = 0;
  double expert_params = 0;  // of params, the experts' (synced over the expert-data group)
  double layers = 0;
  double weight_grad_s = 0;  // of backward_s, the W pass
  double moe_layers = 0;
  double total() const {
    return compute_s + tp_exposed_s + cp_exposed_s + ep_exposed_s + pp_s + zero3_exposed_s;
  }
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
