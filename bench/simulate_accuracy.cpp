// How far the fixed step ratio moves a prediction. validate predicts each run's step from the
// simulator; a refit (fit_knobs, cross_validate) reads the closed form times the chosen plan's
// simulated / closed-form ratio, fixed once at the shipped constants (with_step_ratios). This
// prints, for each knob at a few multipliers and for the constants each held-out fold was
// fitted to, the deviation of that approximation from a full simulation of the same prediction:
// |approximate / simulated - 1| (mean and max, and the case of the max).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "shardplan/calibration.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/validation.hpp"

using namespace shardplan;

namespace {

struct Deviation {
  double sum = 0, max = 0;
  int n = 0, plan_changed = 0;
  std::string worst;
  void add(const PublishedRun& fixed, const PublishedRun& raw) {
    const Prediction a = predict(fixed), s = predict(raw);
    if (s.predicted <= 0) return;
    const double d = std::fabs(a.predicted / s.predicted - 1);
    sum += d;
    ++n;
    // The fields the predictor chooses (validation.hpp).
    if (a.plan.micro_batch != s.plan.micro_batch || a.plan.interleave != s.plan.interleave ||
        a.plan.recompute != s.plan.recompute)
      ++plan_changed;
    if (d > max) {
      max = d;
      worst = raw.id;
    }
  }
  void print(const std::string& what) const {
    fmt::print("{:<44} {:>5} {:>8.3f}% {:>8.3f}% {:>5}  {}\n", what, n,
               n ? 100 * sum / n : 0.0, 100 * max, plan_changed, worst);
  }
};

bool is_step(const PublishedRun& r) {
  return r.metric != Metric::activations_gib && r.metric != Metric::layer_fwd_bwd_ms;
}

}  // namespace

int main() {
  // As validate does: a run its source flags is never fitted on or counted.
  const std::vector<PublishedRun> raw = load_shipped_corpus().counted;
  const std::vector<PublishedRun> fixed = with_step_ratios(raw, StepModel::simulated);
  const std::vector<KnobFit> ks = knob_table(raw);
  fmt::print("# |closed form x fixed ratio / simulated - 1| of the predicted figure\n");
  fmt::print("{:<44} {:>5} {:>9} {:>9} {:>5}  {}\n", "constants", "cases", "mean", "max",
             "plan*", "case of the max");
  Deviation overall;
  for (size_t j = 0; j < ks.size(); ++j) {
    for (double m : {0.5, 0.8, 1.25, 2.0}) {
      std::vector<KnobFit> trial = ks;
      trial[j].multiplier = m;
      Deviation d;
      for (size_t i = 0; i < raw.size(); ++i) {
        if (!is_step(raw[i]) || !ks[j].knob->applies(raw[i])) continue;
        d.add(with_knobs(fixed[i], trial), with_knobs(raw[i], trial));
      }
      d.print(fmt::format("{} x {}", ks[j].name, m));
      if (d.max > overall.max) overall = d;
    }
  }
  // The constants the cross-validation predicts each held-out group with.
  std::vector<std::string> groups;
  for (const PublishedRun& r : raw)
    if (std::find(groups.begin(), groups.end(), r.source_group) == groups.end())
      groups.push_back(r.source_group);
  Deviation folds;
  for (const std::string& g : groups) {
    std::vector<bool> use(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) use[i] = raw[i].source_group != g;
    const std::vector<KnobFit> fold = fit_knobs(fixed, use);
    for (size_t i = 0; i < raw.size(); ++i)
      if (!use[i] && is_step(raw[i])) folds.add(with_knobs(fixed[i], fold), with_knobs(raw[i], fold));
  }
  folds.print("every held-out case, its fold's constants");
  fmt::print("\nworst single knob setting: max {:.3f}% ({}); plan*: cases whose chosen plan "
             "differs (the ratio is the shipped constants' plan's)\n",
             100 * overall.max, overall.worst);
  return 0;
}
