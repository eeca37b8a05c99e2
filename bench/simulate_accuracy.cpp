// `validate` with the simulator: every published run predicted with the closed-form step (what
// `validate` reports) and with the simulated step of the same plan, both as the shipped
// constants predict it and held out (constants refitted without the run's source group, as
// `validate --cross-validate` does). Prints the pipeline-parallel and MoE cases, the mean
// |error| per source group, and the pipeline-heavy, MoE and held-out cases called out.
// SIM_FOLDS=0 skips the refits (the shipped constants only).
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "shardplan/calibration.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/validation.hpp"

using namespace shardplan;

namespace {

// The figure the run measures from the simulated step instead of the closed form's: the
// prediction scaled by closed / simulated step (figures that are not step times stay).
double simulated_error(const PublishedRun& run, const Prediction& p) {
  if (run.metric == Metric::layer_fwd_bwd_ms || run.metric == Metric::activations_gib)
    return p.error;
  const Estimate e = estimate(run.model, run.training, p.plan, run.cluster);
  if (!e.simulated.ran || e.simulated.step_s <= 0) return p.error;
  const double ratio = e.time.step_s / e.simulated.step_s;
  const double sim =
      run.metric == Metric::iteration_time_s ? p.predicted / ratio : p.predicted * ratio;
  return (sim - run.measured) / run.measured;
}

struct Errors {
  double closed = 0, simulated = 0;  // sums of |error|
  int n = 0;
  void add(double c, double s) {
    closed += std::fabs(c);
    simulated += std::fabs(s);
    ++n;
  }
  std::string text() const {
    if (n == 0) return fmt::format("{:>6} {:>10} {:>10}", 0, "-", "-");
    return fmt::format("{:>6} {:>9.2f}% {:>9.2f}%", n, 100 * closed / n, 100 * simulated / n);
  }
};

struct Case {
  const PublishedRun* run;
  double closed, simulated;        // shipped constants
  double cv_closed, cv_simulated;  // constants fitted without the run's group
};

std::vector<Case> predict_all(const std::vector<PublishedRun>& runs, bool folds) {
  std::map<std::string, std::vector<KnobFit>> fold_of;
  std::vector<Case> out;
  for (const PublishedRun& r : runs) {
    Case c{&r, 0, 0, 0, 0};
    const Prediction p = predict(r);
    c.closed = p.error;
    c.simulated = simulated_error(r, p);
    c.cv_closed = c.closed;
    c.cv_simulated = c.simulated;
    if (folds) {
      if (!fold_of.count(r.source_group)) {
        std::vector<bool> use(runs.size());
        for (size_t i = 0; i < runs.size(); ++i) use[i] = runs[i].source_group != r.source_group;
        fold_of[r.source_group] = fit_knobs(runs, use);
      }
      const PublishedRun held = with_knobs(r, fold_of[r.source_group]);
      const Prediction q = predict(held);
      c.cv_closed = q.error;
      c.cv_simulated = simulated_error(held, q);
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

int main() {
  const bool folds = !std::getenv("SIM_FOLDS") || std::string(std::getenv("SIM_FOLDS")) != "0";
  auto runs = load_published_runs(default_published_runs(), "published-runs.json");
  for (PublishedRun& r : load_published_runs(default_holdout_runs(), "holdout-runs.json")) {
    r.id = "holdout-" + r.id;
    runs.push_back(std::move(r));
  }
  const std::vector<Case> cases = predict_all(runs, folds);
  fmt::print(
      "# error of the predicted figure: closed-form step vs simulated step; cv = held out "
      "(constants fitted without the run's source group){}\n",
      folds ? "" : " [SIM_FOLDS=0: shipped constants only]");
  fmt::print("{:<48} {:<12} {:>9} {:>9} {:>9} {:>9}\n", "case (pp > 1 or MoE)", "schedule",
             "closed", "simulated", "cv closed", "cv sim");
  std::map<std::string, Errors> groups, groups_cv;
  Errors pipeline, interleaved, moe, held_out, every;
  for (const Case& c : cases) {
    const PublishedRun& r = *c.run;
    groups[r.source_group].add(c.closed, c.simulated);
    groups_cv[r.source_group].add(c.cv_closed, c.cv_simulated);
    every.add(c.cv_closed, c.cv_simulated);
    if (r.held_out) held_out.add(c.closed, c.simulated);
    if (r.plan.pp > 1) pipeline.add(c.cv_closed, c.cv_simulated);
    if (r.plan.pp > 1 && r.plan.interleave > 1) interleaved.add(c.cv_closed, c.cv_simulated);
    if (r.model.is_moe()) moe.add(c.cv_closed, c.cv_simulated);
    if (r.plan.pp > 1 || r.model.is_moe()) {
      fmt::print("{:<48} {:<12} {:>+8.1f}% {:>+8.1f}% {:>+8.1f}% {:>+8.1f}%\n", r.id,
                 schedule_name(r.plan), 100 * c.closed, 100 * c.simulated, 100 * c.cv_closed,
                 100 * c.cv_simulated);
    }
  }
  fmt::print("\n{:<30} {:>6} {:>10} {:>10} {:>6} {:>10} {:>10}\n", "source group", "cases",
             "closed", "simulated", "cv", "cv closed", "cv sim");
  for (const auto& [name, g] : groups)
    fmt::print("{:<30} {} {}\n", name, g.text(), groups_cv[name].text());
  fmt::print("\nmean |error|                        cases     closed  simulated\n");
  fmt::print("{:<34} {}\n", "every case, held out (cv)", every.text());
  fmt::print("{:<34} {}\n", "pipeline-heavy (pp > 1), cv", pipeline.text());
  fmt::print("{:<34} {}\n", "  of them interleaved, cv", interleaved.text());
  fmt::print("{:<34} {}\n", "MoE, cv", moe.text());
  fmt::print("{:<34} {}\n", "holdout-runs.json (never fitted)", held_out.text());
  return 0;
}
