// The pipeline schedules' names as values, apart from their table (schedule.hpp): the plan
// (specs.hpp) and the framework capabilities (framework.hpp) name a schedule without depending
// on how one runs, and schedule.hpp, which reads plans, depends on them.
#pragma once

#include <vector>

namespace shardplan {

/// Pipeline schedules. Everything about each (its names as the profiles and --schedule spell
/// them, help, chunks, bubble, memory, simulator order) is its row in the schedule table
/// (schedule.hpp, schedule_rows). one_f_one_b with more than one virtual stage per device is
/// Megatron-LM's interleaved 1F1B, the same as `interleaved`.
enum class Schedule { one_f_one_b, interleaved, gpipe, zb_h1, zb_v, dualpipe_v };
/// Every schedule, in the order of its table (schedule.cpp's schedule_rows).
std::vector<Schedule> all_schedules();

}  // namespace shardplan
