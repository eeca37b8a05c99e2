// One training step as a deterministic discrete-event simulation: each pipeline rank's compute
// stream runs its schedule's passes in the order the schedule issues them, communication runs on
// streams of its own (one per parallelism) and on link tiers shared by every stream that crosses
// them, and a pass starts when its stream is free and what it consumes has arrived. Equal inputs
// give equal events. The closed forms of schedule.hpp stay as the search's fast bound.
#pragma once

#include <array>
#include <vector>

#include "shardplan/simulate_events.hpp"

namespace shardplan {

/// The order each rank issues its passes in:
///   gpipe        all forwards, then all backwards (Huang et al. 2019)
///   one_f_one_b  p - d - 1 warm-up forwards, then one forward and one backward (Narayanan et
///                al. 2021 Sec. 2.2)
///   interleaved  Megatron-Core's interleaved 1F1B: virtual micro-batches in groups of
///                `group_size`, warm-up (p - d - 1) 2 + (v - 1) g (schedules.py,
///                get_schedule_table)
///   zb_h1        1F1B with the backward split into B and W (Qi et al. 2024 Sec. 3.1), each W
///                deferred behind later B passes so that the W passes fill the drain
///   zb_v         PyTorch's ScheduleZBVZeroBubble order (Qi et al. 2024 Sec. 6), two chunks in a V
///   dualpipe_v   DeepSeek's DualPipeV (dualpipev.py: its eight steps, F&B chunks paired when
///                pair_passes)
///   dualpipe     DeepSeek's DualPipe (dualpipe.py): two pipelines in opposite directions, half
///                the micro-batches each; every rank holds one stage of each
enum class SimOrder { gpipe, one_f_one_b, interleaved, zb_h1, zb_v, dualpipe_v, dualpipe };
const char* to_string(SimOrder order);


/// Communication that runs inside a pass (TP's per-layer collectives, CP's ring steps, EP's
/// dispatch and combine), finer-grained than the schedule: `*_hidden_s` runs beside the pass on
/// its stream (its exposed part is already in the pass's time); `ep_s` is in the pass's time
/// unless the schedule overlaps it with another micro-batch's pass (an F&B pair).
struct PassComm {
  double tp_hidden_s = 0, tp_bytes = 0;
  double cp_hidden_s = 0, cp_bytes = 0;
  double ep_s = 0, ep_bytes = 0;
  SimLink tp_link = SimLink::scale_up, cp_link = SimLink::scale_up, ep_link = SimLink::scale_up;
};

/// Data-parallel traffic of one virtual stage's parameters.
struct DataParallelWork {
  // ZeRO-0/1/2: the gradients' all-reduce or reduce-scatter, in `buckets` issued as the last
  // micro-batch's backward produces them (every micro-batch's with `every_micro_batch`, ZeRO-2).
  double reduce_s = 0, reduce_bytes = 0;
  int buckets = 1;
  bool every_micro_batch = false;
  // ZeRO-1/2: the updated weights' all-gather before the first forward (all of it, or only the
  // first bucket with --overlap-param-gather, the rest beside the forward).
  double gather_s = 0, gather_bytes = 0;
  // ZeRO-3 / FSDP: per unit (layer) an all-gather before its forward and again before its
  // backward, and a reduce-scatter after its backward; prefetch depth one when `prefetch`.
  int units = 0;
  double unit_gather_s = 0, unit_gather_bytes = 0;
  double unit_reduce_s = 0, unit_reduce_bytes = 0;
  bool unit_reduce_last_only = false;  // deferred sync: only the last micro-batch reduces
  // Weights kept gathered (memory.hpp zero3_gathers): no gathers before a backward, and with
  // `unit_gather_first_only` none after the stage's first forward of the step.
  bool unit_gather_backward = true;
  bool unit_gather_first_only = false;
  bool prefetch = true;
  SimLink link = SimLink::none;
};

/// One virtual stage (model chunk) and one micro-batch's passes through it.
struct SimStage {
  int device = 0;            // pipeline rank that runs it
  double forward_s = 0;      // F, with its exposed TP / CP / EP time
  double input_grad_s = 0;   // B, with recompute first
  double weight_grad_s = 0;  // W
  double recompute_s = 0;    // of input_grad_s
  PassComm forward_comm, backward_comm;
  double send_s = 0, send_bytes = 0;  // the boundary activation (and its gradient) to a neighbour
  SimLink send_link = SimLink::none;
  DataParallelWork dp;
};

/// Whether a pipeline send holds its sender's compute until it completes (the framework
/// profile's overlap.pp_send):
///   never                 the send runs beside the next pass (torch.distributed.pipelining)
///   always                the next pass waits for it (Megatron-Core's non-interleaved 1F1B,
///                         DeepSpeed's PipelineEngine)
///   steady_gradients      the steady state's gradient sends run beside the next pass; every
///                         activation send and the warm-up's and cool-down's wait (Megatron-Core's
///                         interleaved 1F1B with overlap_p2p_comm and deallocate_pipeline_outputs,
///                         as Megatron-LM sets both: the activation's isend is waited before its
///                         buffer is freed)
enum class SimSendWait { never, always, steady_gradients };

struct SimInput {
  SimOrder order = SimOrder::one_f_one_b;
  SimSendWait send_wait = SimSendWait::never;
  int devices = 1;
  int micro_batches = 1;
  int group_size = 0;  // interleaved: micro-batches per group (0: devices)
  /// Virtual stages in model order: devices x chunks; DualPipe: the down pipeline's stages, then
  /// the up pipeline's (device devices - 1 - j holds its stage j).
  std::vector<SimStage> stages;
  std::vector<double> optimizer_s;  // per device, after its gradients are reduced
  /// One micro-batch's forward issued with another's backward as one pass, each one's EP
  /// all-to-alls beside the other's compute (the plan's moe_a2a_overlap where the schedule runs
  /// it): DualPipe / DualPipe-V's F&B chunks (dualpipev.py _forward_backward_chunk with the
  /// module's overlapped_forward_backward); Megatron-Core's combined 1F1B, which pairs the
  /// steady state's forward and backward after one more warm-up forward (schedules.py
  /// get_pp_rank_microbatches: num_warmup_microbatches += 1 with overlap_moe_expert_parallel_comm;
  /// combined_1f1b.py combined_1f1b_schedule_for_no_pipelining and _for_interleaved_pipelining).
  /// Off: DualPipe's F&B chunks run as a forward, then a backward.
  bool pair_passes = false;
  /// Compute lost per second of communication it overlaps (the GPU profile's overlap_slowdown:
  /// NCCL kernels take SMs and HBM bandwidth from the compute beside them).
  double overlap_slowdown = 0;
  bool keep_events = true;  // the search's re-rank needs only the figures
};

/// A plan's simulated step, as estimate() reports it beside the closed forms.
struct SimulatedStep {
  bool ran = false;      // false: not simulated (no architecture to lay out)
  double step_s = 0;     // the simulation's step, plus offload's exposed time it does not model
  double bubble_s = 0;   // of the critical device
  double compute_s = 0;  // the passes without the in-pass communication they carry
  double contention_s = 0;
  double optimizer_s = 0;
  /// The critical device's exposed communication per stream: waits between passes, plus the
  /// in-pass TP / CP / EP time its passes carry.
  std::array<double, kSimStreams> exposed_s{};
  int critical_device = 0;
  int tasks = 0;
  SimOrder order = SimOrder::one_f_one_b;
  SimResult result;  // with the events when asked for
};

/// Runs the step. Requires stages.size() = devices x chunks of the order (DualPipe: 2 devices),
/// micro_batches >= 1.
SimResult simulate(const SimInput& input);

/// Each device's issue order, for tests and the trace: the passes as (kind, stage, micro-batch).
struct SimPass {
  SimTaskKind kind = SimTaskKind::forward;
  int stage = 0, micro_batch = 0;
  int stage2 = -1, micro_batch2 = -1;  // overlapped: the backward
};
std::vector<std::vector<SimPass>> issue_order(const SimInput& input);

}  // namespace shardplan
