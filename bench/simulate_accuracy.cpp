// The published runs predicted twice: with the closed-form step (what `validate` reports) and
// with the simulated step of the same plan. Prints each pipeline-parallel or MoE case and the
// mean |error| per group, before and after.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/validation.hpp"

using namespace shardplan;

namespace {

// The figure the run measures, from the simulated step instead of the closed form's.
double simulated_figure(const PublishedRun& run, const Prediction& p) {
  if (run.metric == Metric::layer_fwd_bwd_ms || run.metric == Metric::activations_gib)
    return p.predicted;
  const Estimate e = estimate(run.model, run.training, p.plan, run.cluster);
  if (!e.simulated.ran || e.simulated.step_s <= 0) return p.predicted;
  const double ratio = e.time.step_s / e.simulated.step_s;
  if (std::getenv("SIM_DETAIL")) {
    const SimulatedStep& s = e.simulated;
    fmt::print(
        "  {} closed step {:.3f} (compute {:.3f} bubble {:.3f} exposed {:.3f} opt {:.3f}) | "
        "sim step {:.3f} (compute {:.3f} bubble {:.3f} opt {:.3f} crit {}) exposed:",
        run.id, e.time.step_s, e.time.compute_s, e.time.bubble_s, e.time.exposed_comm_s,
        e.time.optimizer_s, s.step_s, s.compute_s, s.bubble_s, s.optimizer_s, s.critical_device);
    for (int k = 1; k < kSimStreams; ++k)
      fmt::print(" {} {:.3f}", to_string(static_cast<SimStream>(k)), s.exposed_s[k]);
    fmt::print("  [{}]\n", describe(p.plan));
    if (std::getenv("SIM_DEVICES")) {
      for (size_t d = 0; d < s.result.devices.size(); ++d) {
        const SimDevice& x = s.result.devices[d];
        fmt::print("    device {:>2} compute {:.3f} bubble {:.3f} pp {:.3f} reduce {:.3f}\n", d,
                   x.compute_s, x.bubble_s, x.exposed_s[static_cast<int>(SimStream::pp)],
                   x.exposed_s[static_cast<int>(SimStream::dp_reduce)]);
      }
      fmt::print(
          "    passes first F {:.4f} B {:.4f} W {:.4f}; middle F {:.4f} B {:.4f} W {:.4f}; last F {:.4f} B {:.4f} W {:.4f}; send {:.5f}\n",
          e.time.first_work.forward_s, e.time.first_work.input_grad_s,
          e.time.first_work.weight_grad_s, e.time.middle_work.forward_s,
          e.time.middle_work.input_grad_s, e.time.middle_work.weight_grad_s,
          e.time.last_work.forward_s, e.time.last_work.input_grad_s, e.time.last_work.weight_grad_s,
          e.comm.pp.call_s);
    }
  }
  return run.metric == Metric::iteration_time_s ? p.predicted / ratio : p.predicted * ratio;
}

}  // namespace

int main() {
  struct Row {
    double before = 0, after = 0;
    int n = 0;
  };
  std::map<std::string, Row> groups;
  auto runs = load_published_runs(default_published_runs(), "published-runs.json");
  for (PublishedRun& r : load_published_runs(default_holdout_runs(), "holdout-runs.json")) {
    r.id = "holdout-" + r.id;
    runs.push_back(std::move(r));
  }
  fmt::print("{:<44} {:<12} {:>9} {:>9} {:>9}\n", "case (pp > 1 or MoE)", "schedule", "measured",
             "closed", "simulated");
  for (const PublishedRun& run : runs) {
    const Prediction p = predict(run);
    const double sim = simulated_figure(run, p);
    const double after = (sim - run.measured) / run.measured;
    const bool holdout = run.id.rfind("holdout-", 0) == 0;
    const size_t from = holdout ? 8 : 0;
    const auto cut = run.id.find('-', run.id.find('-', from) + 1);
    Row& g = groups[run.id.substr(0, cut)];
    g.before += std::fabs(p.error);
    g.after += std::fabs(after);
    ++g.n;
    if (p.plan.pp > 1 || run.model.is_moe()) {
      fmt::print("{:<44} {:<12} {:>9.4g} {:>+8.1f}% {:>+8.1f}%\n", run.id, schedule_name(p.plan),
                 run.measured, p.error * 100, after * 100);
    }
  }
  fmt::print("\n{:<28} {:>6} {:>16} {:>16}\n", "group", "cases", "closed |error|",
             "simulated |error|");
  for (const auto& [name, g] : groups) {
    fmt::print("{:<28} {:>6} {:>15.2f}% {:>15.2f}%\n", name, g.n, 100 * g.before / g.n,
               100 * g.after / g.n);
  }
  return 0;
}
