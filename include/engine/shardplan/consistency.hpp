// The invariants every estimate keeps, checked in one place, and the one way a report turns a
// part of the step into a share of it. Every command's tables, JSON and charts read
// share_of_step, so the step table, the communication table and the ladder agree.
#pragma once

#include <string>
#include <vector>

#include "shardplan/step_time.hpp"

namespace shardplan {

/// `seconds` as a share of the step: the step table's "share", the communication table's
/// "share of step" (a row's exposed time) and the ladder's exposed-communication share alike.
double share_of_step(double seconds, const StepTime& time);
/// The same for a plan known by its step time alone (a search candidate, a ladder rung).
double share_of_step(double seconds, double step_s);

/// One broken invariant: what, the value found and the bound it broke.
struct Inconsistency {
  std::string what;
  double value = 0;
  double bound = 0;
};

/// Every invariant an estimate must keep: each collective row's exposed time between 0 and
/// its time, the rows' exposed times adding up to the step's exposed communication, the
/// step equal to the sum of its parts, and MFU no higher than HFU. Empty when all hold.
std::vector<Inconsistency> inconsistencies(const Estimate& estimate);

}  // namespace shardplan
