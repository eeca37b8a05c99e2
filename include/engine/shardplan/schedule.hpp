// Pipeline schedules: how long each device idles per step (the bubble), how many micro-batches'
// activations it holds at its peak, and which plans each schedule can run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shardplan/schedule_id.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

enum class SimOrder;  // simulate.hpp
struct PassTimes;

/// How many model chunks (virtual stages) a schedule runs on each device.
enum class ScheduleChunks {
  one,           // GPipe
  any,           // 1F1B (v > 1: interleaved), ZB-H1
  at_least_two,  // interleaved 1F1B
  two_v          // two chunks in a V: ZB-V, DualPipeV
};

/// One row per pipeline schedule, holding everything about it; every name parser, help string,
/// capability check, search axis, launcher name and simulator order reads this table. A new
/// schedule is its value in `Schedule` (schedule_id.hpp) and one row in its table (schedule_table
/// in schedule.cpp).
struct ScheduleRow {
  Schedule id;
  const char* name;  // as --schedule and the framework profiles spell it
  const char* help;  // what it is, with its source
  ScheduleChunks chunks;
  bool searched;  // an axis of `plan`'s search (interleaved and GPipe are not: 1F1B's v covers
                  // the one, the other is never faster)
  /// Micro-batches per pipeline stage it needs to fill (DualPipeV: 2, one from each end of the
  /// V); 0: pp with virtual stages, 1 without.
  int fill_per_stage;
  /// torch.distributed.pipelining's class name (schedules.get_schedule_class), as torchtitan's
  /// parallelism.pipeline_parallel_schedule takes it.
  const char* torchtitan_class;
  SimOrder order;              // the simulator's pass order with one chunk per device
  SimOrder order_interleaved;  // ... with more than one
  /// Idle seconds per step given the fills (p - 1), virtual stages v and one micro-batch's
  /// passes on a device (the formulas of bubble_s below).
  double (*bubble)(double fills, double v, const PassTimes& per_device);
  /// Micro-batches in flight at stage `stage` (microbatches_in_flight below), pp > 1.
  double (*in_flight)(const ParallelPlan& plan, int micro_batches, int stage);
};

/// Every schedule, in the order --help and error messages list them.
const std::vector<ScheduleRow>& schedule_rows();
const ScheduleRow& schedule_row(Schedule s);
/// "1f1b | interleaved | ...": the names joined by `separator`.
std::string schedule_names(const std::string& separator);

/// One micro-batch's compute on one device, over all its model chunks, split as the zero-bubble
/// schedules split the backward pass (Qi et al. 2024 Sec. 2): B computes the gradients of the
/// inputs (what the previous stage waits for), W those of the weights (what can wait).
struct PassTimes {
  double forward_s = 0;      // F
  double input_grad_s = 0;   // B, with any recompute
  double weight_grad_s = 0;  // W
  double total_s() const { return forward_s + input_grad_s + weight_grad_s; }
};

/// Schedules that place two model chunks on each device in a V: device d holds virtual stages d
/// and 2p - 1 - d, so device 0 holds both the embedding and the LM head.
bool is_v_shape(Schedule s);

/// The schedule a plan runs: 1F1B with more than one virtual stage per device is interleaved
/// 1F1B (Narayanan et al. 2021 Sec. 2.2.2); any other schedule is itself. The one place that
/// derives it: names, framework rules, their messages and plan readers ask here.
Schedule schedule_of(const ParallelPlan& plan);

/// The schedule's name as users type it; 1F1B with virtual stages is "interleaved".
const char* schedule_name(const ParallelPlan& plan);

/// Seconds a device idles in one step for pipeline fill and drain, per schedule:
///   1F1B, interleaved  (p-1)(F+B+W)/v       Narayanan et al. 2021 Sec. 2.2
///   GPipe              (p-1)(F+B+W)         Huang et al. 2019; Narayanan et al. 2021 Sec. 2.2.1
///   ZB-H1              (p-1)(F+B-W)/v       Qi et al. 2024 Sec. 2.1 (v > 1: torchtitan's
///                                           InterleavedZeroBubble, the 1/v of interleaving)
///   ZB-V               (p-1)(F+B-2W)/2      chunk times F/2, B/2, W/2; 0 at F = B = W as Qi
///                                           et al. report for ZB-V
///   DualPipeV          (p-1)(F&B + B' - 3W)/2  DeepSeek-V3 report Table 2 (B' = B + W, the full
///                                           backward; F&B = F + B', no overlap credited)
/// with F, B, W one micro-batch's passes on the device. Never below zero.
double bubble_s(const ParallelPlan& plan, const PassTimes& per_device);

/// Micro-batches of a device's layers whose activations stage `stage` holds at its peak:
/// 1F1B and ZB-H1 min(p - i, m) (Narayanan et al. 2021; ZB-H1 keeps 1F1B's memory, Qi et al.
/// 2024 Sec. 2.1); interleaved min((p-i-1) 2 + (v-1) g + 1, m v) chunks of 1/v each
/// (Megatron-Core's interleaved warm-up, g the micro-batch group size, p by default); GPipe all m;
/// ZB-V p on every device (Qi et al. 2024, ZB-V: 1F1B's peak, balanced); DualPipeV p + 1/2
/// (DeepSeek-V3 Table 2: PP + 1 chunks of half a device, PP = 2p).
double microbatches_in_flight(const ParallelPlan& plan, int micro_batches, int stage);

/// Micro-batches per group of Megatron-Core's interleaved schedule
/// (microbatch_group_size_per_vp_stage): pp when it divides the micro-batches, otherwise the
/// smallest size in [pp, m] whose remainder is 0 or at least pp, as schedules.py requires.
int microbatch_group_size(const ParallelPlan& plan, int micro_batches);

/// What keeps a schedule from running a plan.
enum class ScheduleIssue {
  none,
  needs_pipeline,
  needs_virtual_stages,
  one_chunk_only,
  two_chunks,
  too_few_micro_batches
};
/// Micro-batches per step the schedule needs to fill its pipeline (1 without one).
int min_micro_batches(const ParallelPlan& plan);

/// The first issue, cheap enough for the search's inner loop.
ScheduleIssue schedule_issue(const ParallelPlan& plan, int micro_batches);

}  // namespace shardplan
