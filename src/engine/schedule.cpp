// Bubble and in-flight activations of each pipeline schedule, from the schedule papers' tables.
#include "shardplan/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace shardplan {

bool is_v_shape(Schedule s) {
  return s == Schedule::zb_v || s == Schedule::dualpipe_v;
}

Schedule schedule_of(const ParallelPlan& p) {
  return p.schedule == Schedule::one_f_one_b && p.interleave > 1 ? Schedule::interleaved
                                                                 : p.schedule;
}

const char* schedule_name(const ParallelPlan& p) {
  return to_string(schedule_of(p));
}

double bubble_s(const ParallelPlan& p, const PassTimes& t) {
  if (p.pp <= 1) return 0;
  const double fills = p.pp - 1.0;
  const double v = p.interleave;
  const double f = t.forward_s, b = t.input_grad_s, w = t.weight_grad_s;
  double bubble = 0;
  switch (p.schedule) {
    case Schedule::one_f_one_b:
    case Schedule::interleaved:
      bubble = fills * (f + b + w) / v;
      break;
    case Schedule::gpipe:
      bubble = fills * (f + b + w);
      break;
    case Schedule::zb_h1:
      bubble = fills * (f + b - w) / v;
      break;
    case Schedule::zb_v:
      bubble = fills * (f + b - 2.0 * w) / 2.0;
      break;
    case Schedule::dualpipe_v: {
      const double full_backward = b + w;
      bubble = fills * ((f + full_backward) + full_backward - 3.0 * w) / 2.0;
      break;
    }
  }
  return std::max(0.0, bubble);
}

double microbatches_in_flight(const ParallelPlan& p, int micro_batches, int stage) {
  const double m = micro_batches;
  if (p.pp == 1) return 1;  // accumulation runs micro-batches one after another
  const double v = p.interleave;
  switch (p.schedule) {
    case Schedule::gpipe:
      return m;
    case Schedule::zb_v:
      return std::min<double>(p.pp, m);
    case Schedule::dualpipe_v:
      return std::min(2.0 * p.pp + 1.0, 2.0 * m) / 2.0;
    case Schedule::one_f_one_b:
    case Schedule::interleaved:
    case Schedule::zb_h1:
      break;
  }
  if (p.interleave == 1) return std::min<double>(p.pp - stage, m);
  const double group = microbatch_group_size(p, micro_batches);
  return std::min((p.pp - stage - 1) * 2.0 + (v - 1.0) * group + 1.0, m * v) / v;
}

int microbatch_group_size(const ParallelPlan& p, int micro_batches) {
  for (int g = p.pp; g < micro_batches; ++g) {
    const int rest = micro_batches % g;
    if (rest == 0 || rest >= p.pp) return g;
  }
  return std::max(p.pp, micro_batches);
}

// Megatron-Core's interleaved schedule runs micro-batches in groups of
// microbatch_group_size_per_vp_stage, at least pp and at most the micro-batches (schedules.py),
// so it needs pp of them; any count from there has a valid group size; PyTorch's
// ScheduleZBVZeroBubble and DeepSeek's DualPipeV likewise need the pipeline filled (DualPipeV: two
// micro-batches per device, one from each end of the V).
int min_micro_batches(const ParallelPlan& p) {
  if (p.schedule == Schedule::dualpipe_v) return 2 * p.pp;
  return p.interleave > 1 ? p.pp : 1;
}

ScheduleIssue schedule_issue(const ParallelPlan& p, int micro_batches) {
  if (p.pp == 1 && (p.schedule != Schedule::one_f_one_b || p.interleave > 1))
    return ScheduleIssue::needs_pipeline;
  if (p.schedule == Schedule::interleaved && p.interleave < 2)
    return ScheduleIssue::needs_virtual_stages;
  if (p.schedule == Schedule::gpipe && p.interleave > 1) return ScheduleIssue::one_chunk_only;
  if (is_v_shape(p.schedule) && p.interleave != 2) return ScheduleIssue::two_chunks;
  if (micro_batches > 0 && micro_batches < min_micro_batches(p))
    return ScheduleIssue::too_few_micro_batches;
  return ScheduleIssue::none;
}

}  // namespace shardplan
