// The range a predicted step falls in (interval.hpp).
#include "shardplan/interval.hpp"

#include <algorithm>

namespace shardplan {

StepInterval step_interval(const FrameworkProfile& f, const GpuSpec& gpu, double step_s,
                           const PlanScope& scope) {
  StepInterval i;
  i.accuracy = f.accuracy_for(gpu.accuracy_class, scope.moe);
  double low = i.accuracy ? i.accuracy->step_error_low : 0;
  double high = i.accuracy ? i.accuracy->step_error_high : 0;
  if (i.accuracy == &f.beyond_corpus) {
    const std::string fw = f.name.empty() ? "this framework" : f.name;
    i.beyond = "no validation case of " + fw + " on " +
               (gpu.accuracy_class.empty() ? gpu.name : gpu.accuracy_class);
  } else if (i.accuracy && f.beyond_corpus.cases > 0) {
    const std::string outside = i.accuracy->reach.outside(scope);
    if (!outside.empty()) {
      i.beyond = "the " + (f.name.empty() ? std::string("none") : f.name) + " x " +
                 i.accuracy->name() + " cases do not span " + outside;
      // Beyond what the class's cases span: the wider of its own and the beyond-corpus one.
      low = std::min(low, f.beyond_corpus.step_error_low);
      high = std::max(high, f.beyond_corpus.step_error_high);
      i.accuracy = &f.beyond_corpus;
    }
  }
  i.error_low = low;
  i.error_high = high;
  i.low_s = step_s * (1 + low);
  i.high_s = step_s * (1 + high);
  return i;
}

}  // namespace shardplan
