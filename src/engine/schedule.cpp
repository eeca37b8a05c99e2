// Bubble and in-flight activations of each pipeline schedule, from the schedule papers' tables,
// and the one table that holds everything about each schedule.
#include "shardplan/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"
#include "shardplan/simulate.hpp"

namespace shardplan {
namespace {

// Bubbles, with F, B, W one micro-batch's passes on the device (formulas in schedule.hpp).
double bubble_1f1b(double fills, double v, const PassTimes& t) {
  return fills * t.total_s() / v;  // Narayanan et al. 2021 Sec. 2.2
}
double bubble_gpipe(double fills, double, const PassTimes& t) {
  return fills * t.total_s();  // Huang et al. 2019
}
double bubble_zb_h1(double fills, double v, const PassTimes& t) {
  return fills * (t.forward_s + t.input_grad_s - t.weight_grad_s) / v;  // Qi et al. 2024 Sec. 2.1
}
double bubble_zb_v(double fills, double, const PassTimes& t) {
  return fills * (t.forward_s + t.input_grad_s - 2.0 * t.weight_grad_s) / 2.0;  // Qi et al. 2024
}
double bubble_dualpipe_v(double fills, double, const PassTimes& t) {
  // DeepSeek-V3 report Table 2: (F&B + B' - 3W)/2 per fill, B' = B + W the full backward.
  const double full_backward = t.input_grad_s + t.weight_grad_s;
  return fills * ((t.forward_s + full_backward) + full_backward - 3.0 * t.weight_grad_s) / 2.0;
}

// In flight at the peak (formulas in schedule.hpp), pp > 1.
double in_flight_1f1b(const ParallelPlan& p, int micro_batches, int stage) {
  const double m = micro_batches;
  if (p.interleave == 1) return std::min<double>(p.pp - stage, m);
  const double v = p.interleave;
  const double group = microbatch_group_size(p, micro_batches);
  return std::min((p.pp - stage - 1) * 2.0 + (v - 1.0) * group + 1.0, m * v) / v;
}
double in_flight_gpipe(const ParallelPlan&, int micro_batches, int) {
  return micro_batches;
}
double in_flight_zb_v(const ParallelPlan& p, int micro_batches, int) {
  return std::min<double>(p.pp, micro_batches);
}
double in_flight_dualpipe_v(const ParallelPlan& p, int micro_batches, int) {
  return std::min(2.0 * p.pp + 1.0, 2.0 * micro_batches) / 2.0;
}

}  // namespace

// The table. A function's static, so that tables initialised before main (the CLI's flag table,
// which prints the names) find it built.
const std::vector<ScheduleRow>& schedule_rows() {
  using C = ScheduleChunks;
  using O = SimOrder;
  static const std::vector<ScheduleRow> rows = {
      {Schedule::one_f_one_b, "1f1b",
       "one forward, one backward (PipeDream-Flush; Narayanan et al. 2021 Sec. 2.2); with "
       "--interleave, interleaved 1F1B",
       C::any, true, 0, "1F1B", O::one_f_one_b, O::interleaved, bubble_1f1b, in_flight_1f1b},
      {Schedule::interleaved, "interleaved",
       "interleaved 1F1B over v >= 2 model chunks per device (Narayanan et al. 2021 Sec. 2.2.2)",
       C::at_least_two, false, 0, "Interleaved1F1B", O::one_f_one_b, O::interleaved, bubble_1f1b,
       in_flight_1f1b},
      {Schedule::gpipe, "gpipe", "all forwards, then all backwards (Huang et al. 2019)", C::one,
       false, 0, "GPipe", O::gpipe, O::gpipe, bubble_gpipe, in_flight_gpipe},
      {Schedule::zb_h1, "zb-h1",
       "zero bubble H1: weight gradients deferred into the bubble, 1F1B's memory (Qi et al. 2024 "
       "Sec. 2.1)",
       C::any, true, 0, "InterleavedZeroBubble", O::zb_h1, O::zb_h1, bubble_zb_h1, in_flight_1f1b},
      {Schedule::zb_v, "zb-v", "zero bubble V: two chunks per device in a V (Qi et al. 2024)",
       C::two_v, true, 0, "ZBVZeroBubble", O::zb_v, O::zb_v, bubble_zb_v, in_flight_zb_v},
      {Schedule::dualpipe_v, "dualpipe-v",
       "DualPipeV: DualPipe's V-shaped half, micro-batches from both ends (DeepSeek-V3 report "
       "Table 2)",
       C::two_v, true, 2, "DualPipeV", O::dualpipe_v, O::dualpipe_v, bubble_dualpipe_v,
       in_flight_dualpipe_v},
  };
  return rows;
}

const ScheduleRow& schedule_row(Schedule s) {
  // The table lists the schedules in the enum's order (checked once), so a schedule's row is
  // its index: the search asks for rows at every point.
  static const std::vector<ScheduleRow>& rows = []() -> const std::vector<ScheduleRow>& {
    const std::vector<ScheduleRow>& table = schedule_rows();
    for (size_t i = 0; i < table.size(); ++i)
      SHARDPLAN_CHECK(static_cast<size_t>(table[i].id) == i, "schedule table in enum order");
    return table;
  }();
  const auto i = static_cast<size_t>(s);
  SHARDPLAN_CHECK(i < rows.size(), "schedule missing from its table");
  return rows[i];
}

std::vector<Schedule> all_schedules() {
  std::vector<Schedule> out;
  for (const ScheduleRow& r : schedule_rows()) out.push_back(r.id);
  return out;
}

std::string schedule_names(const std::string& separator) {
  return join_field(schedule_rows(), &ScheduleRow::name, separator);
}

const char* to_string(Schedule s) {
  return schedule_row(s).name;
}

Schedule parse_schedule(const std::string& text, const std::string& field) {
  if (const ScheduleRow* r = find_row(schedule_rows(), &ScheduleRow::name, lowered(text)))
    return r->id;
  throw InputError(field, "'" + text + "' is not one of: " + schedule_names(", "));
}

bool is_v_shape(Schedule s) {
  return schedule_row(s).chunks == ScheduleChunks::two_v;
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
  return std::max(0.0, schedule_row(p.schedule).bubble(p.pp - 1.0, p.interleave, t));
}

double microbatches_in_flight(const ParallelPlan& p, int micro_batches, int stage) {
  if (p.pp == 1) return 1;  // accumulation runs micro-batches one after another
  return schedule_row(p.schedule).in_flight(p, micro_batches, stage);
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
  if (const int fill = schedule_row(p.schedule).fill_per_stage; fill > 0) return fill * p.pp;
  return p.interleave > 1 ? p.pp : 1;
}

ScheduleIssue schedule_issue(const ParallelPlan& p, int micro_batches) {
  if (p.pp == 1 && (p.schedule != Schedule::one_f_one_b || p.interleave > 1))
    return ScheduleIssue::needs_pipeline;
  const ScheduleChunks chunks = schedule_row(p.schedule).chunks;
  if (chunks == ScheduleChunks::at_least_two && p.interleave < 2)
    return ScheduleIssue::needs_virtual_stages;
  if (chunks == ScheduleChunks::one && p.interleave > 1) return ScheduleIssue::one_chunk_only;
  if (chunks == ScheduleChunks::two_v && p.interleave != 2) return ScheduleIssue::two_chunks;
  if (micro_batches > 0 && micro_batches < min_micro_batches(p))
    return ScheduleIssue::too_few_micro_batches;
  return ScheduleIssue::none;
}

}  // namespace shardplan
