// The range a predicted step falls in: the errors the framework's validation cases showed on
// the GPU's accuracy class (FrameworkProfile::accuracy), widened where the plan lies beyond
// what those cases span.
#pragma once

#include <string>

#include "shardplan/framework.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// A predicted step with the range validation says the measured one falls in.
struct StepInterval {
  double low_s = 0, high_s = 0;
  double error_low = 0, error_high = 0;     // the ends applied: measured / predicted - 1
  const AccuracyClass* accuracy = nullptr;  // nullptr: no validation case for this class
  /// Why the plan took the interval beyond the corpus ("no validation case of megatron on L40S",
  /// "the megatron x H100 cases do not span 8192 GPUs (they reach 6144)"); "" when it did not.
  std::string beyond;
  /// True when a plan `faster_s` is faster by less than this interval can tell apart.
  bool within(double faster_s) const { return faster_s >= low_s; }
};
/// The interval of a plan's step: its framework x GPU generation's, or the one beyond the
/// corpus (never narrower) when the plan lies outside what that class's cases span.
StepInterval step_interval(const FrameworkProfile& framework, const GpuSpec& gpu, double step_s,
                           const PlanScope& scope);

}  // namespace shardplan
