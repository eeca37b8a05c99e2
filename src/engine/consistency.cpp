// The estimate's invariants (consistency.hpp): what the reports print must agree with itself.
#include "shardplan/consistency.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace shardplan {
namespace {

// Floating-point slack: sums of a few hundred products agree to far better than this.
constexpr double kRelativeSlack = 1e-9;

bool above(double value, double bound) {
  return value > bound + kRelativeSlack * std::max({1.0, std::abs(value), std::abs(bound)});
}

void check_row(const char* name, const Traffic& t, std::vector<Inconsistency>& out) {
  if (!t.present()) return;
  const std::string row = name;
  if (above(t.exposed_s, t.time_s)) out.push_back({row + ": exposed above its time", t.exposed_s, t.time_s});
  if (t.exposed_s < 0) out.push_back({row + ": exposed below 0", t.exposed_s, 0});
  if (above(std::abs(t.call_s * t.calls - t.time_s), 0)) {
    out.push_back({row + ": time is not calls x per call", t.time_s, t.call_s * t.calls});
  }
}

}  // namespace

double share_of_step(double seconds, double step_s) { return step_s > 0 ? seconds / step_s : 0; }

double share_of_step(double seconds, const StepTime& time) {
  return share_of_step(seconds, time.step_s);
}

MfuPlausibility mfu_plausibility(double mfu, const TrainingSpec& tr, const ClusterSpec& c) {
  MfuPlausibility m;
  m.mfu = mfu;
  m.framework = tr.framework.name;
  m.published = tr.framework.published_mfu_for(c.gpu.accuracy_class);
  m.above_published = m.published.mfu > 0 && mfu > m.published.mfu;
  m.red_flag_at_scale = m.published.mfu <= 0 && mfu > kRedFlagMfu && c.gpus > c.gpus_per_node;
  return m;
}

std::vector<Inconsistency> inconsistencies(const Estimate& e) {
  std::vector<Inconsistency> out;
  const CommBreakdown& c = e.comm;
  for (TrafficKind k : kTrafficKinds) check_row(describe(k), c.of(k), out);
  const StepTime& s = e.time;
  if (above(std::abs(c.exposed_s() - s.exposed_comm_s), 0)) {
    out.push_back({"rows' exposed times against the step's", c.exposed_s(), s.exposed_comm_s});
  }
  const double parts = s.compute_s + s.bubble_s + s.exposed_comm_s + s.optimizer_s + s.offload_s;
  if (above(std::abs(parts - s.step_s), 0)) out.push_back({"step against its parts", s.step_s, parts});
  if (above(s.contention_s, s.compute_s)) {
    out.push_back({"contention above compute", s.contention_s, s.compute_s});
  }
  if (above(e.throughput.mfu, e.throughput.hfu)) {
    out.push_back({"MFU above HFU", e.throughput.mfu, e.throughput.hfu});
  }
  return out;
}

}  // namespace shardplan
