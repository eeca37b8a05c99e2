// Calibration as a procedure: every fitted constant of the profiles is a knob (a multiplier on a
// profile figure) with the published runs it is fitted on; fit_knobs() re-derives them, and
// cross_validate() refits them without each source group and predicts that group, so the
// errors it reports are errors on runs the constants never saw. Step-time intervals come from
// those held-out residuals.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shardplan/validation.hpp"

namespace shardplan {

/// One fitted constant: a multiplier k on a figure of the shipped profiles (k = 1 is the value
/// they ship), fitted on the `fitted` runs `trains` selects, changing the runs `applies` selects.
struct Knob {
  std::string name;
  std::string figure;    // the profile figure it scales and the value shipped
  /// The multiplier when no training run remains (the unfitted default), read from a run it
  /// applies to; empty: 1.
  std::function<double(const PublishedRun&)> prior;
  std::function<bool(const PublishedRun&)> trains;
  std::function<bool(const PublishedRun&)> applies;
  std::function<void(PublishedRun&, double)> apply;
};

/// The table of every fitted constant, in fitting order.
const std::vector<Knob>& knobs();

struct KnobFit {
  std::string name;
  double multiplier = 1;  // relative to the shipped value
  int cases = 0;          // training runs it was fitted on (0: the prior)
};

/// What the predictions read: the simulated step (what `estimate` reports and the intervals
/// are taken around), or the closed forms alone (the search's bound).
enum class StepModel { simulated, closed_form };

/// `runs` with each simulated_step_ratio still 0 fixed: the chosen plan simulated at the run's
/// own constants (simulated), or 1 (closed_form). A refit then scales the closed form by it.
std::vector<PublishedRun> with_step_ratios(std::vector<PublishedRun> runs, StepModel step);

/// Fits every knob on the fitted runs among `runs` with use[i] set: each minimises the mean
/// squared log error of its training runs (golden-section search on log k, coordinate descent
/// over the knobs, two sweeps). Runs without a simulated_step_ratio get theirs first
/// (with_step_ratios, simulated).
std::vector<KnobFit> fit_knobs(const std::vector<PublishedRun>& runs, const std::vector<bool>& use);

/// The run with every knob of `fit` applied.
PublishedRun with_knobs(PublishedRun run, const std::vector<KnobFit>& fit);

/// measured step / predicted step - 1 for a prediction of a step-time figure (time or
/// throughput); false for figures that are not step times (activation memory).
bool step_residual(const Prediction& p, double* residual);

/// The accuracy class a run belongs to: its framework profile, GPU generation and model kind
/// ("megatron H100", "megatron H100 MoE").
std::string accuracy_class_of(const PublishedRun& run);

struct CvCase {
  const PublishedRun* run = nullptr;
  std::string group;
  std::string cls;
  double in_sample_error = 0;  // (predicted - measured) / measured with every run fitted
  double cv_error = 0;         // the same, predicted by constants fitted without its group
  double residual = 0;         // measured step / cross-validated predicted step - 1
  bool step = false;           // a step-time figure (has a residual)
  /// Predicted beyond what its fold's constants saw: its class has no step case in the other
  /// groups, or a constant that prices it had no training run left and fell to its prior.
  bool extrapolated = false;
  bool covered = false;        // inside the 80% interval built without its group
  // The held-out prediction's peak device memory against the one the source publishes
  // (predicted / measured - 1, as the source counts it: allocated or reserved); `peak` false
  // where the source gives none.
  bool peak = false;
  double peak_error = 0;
};

/// The step-time interval of one class from cross-validated residuals.
struct ClassInterval {
  std::string cls;        // "megatron A100"
  int cases = 0;          // step-time residuals of this class
  int groups = 0;         // source groups among them
  double low = 0;         // measured / predicted - 1, the interval's ends (0 inside)
  double high = 0;
  std::string basis;      // what it is based on, in words
  CorpusReach reach;      // what the class's cases span; a plan outside takes the extrapolation's
};

/// Intervals at `level` (0.8) from the cross-validated residuals of cases that were not
/// extrapolated, split-conformal on source groups: the symmetric radius is the weighted quantile
/// of |log(measured / predicted step)| at level x (n + 1) / n, each group weighing one, and a
/// class's own groups mixed with every class's (together weighing kPooledWeight groups), so a
/// class of few groups is shrunk toward the pooled spread.
std::vector<ClassInterval> class_intervals(const std::vector<CvCase>& cases, double level);
/// The interval of a class inside the corpus that has no residual of its own that was not
/// extrapolated (all its cases come from one group): every class's, weighing kPooledWeight.
ClassInterval pooled_interval(const std::vector<CvCase>& cases, double level);
/// The interval of a plan beyond the corpus (a class, precision, MoE, CP or scale no group
/// has): the same quantile over every extrapolated residual, never narrower than in-class.
ClassInterval extrapolation_interval(const std::vector<CvCase>& cases, double level);

inline constexpr double kIntervalLevel = 0.8;
inline constexpr double kPooledWeight = 4;  // pooled residuals count as this many class cases

struct CrossValidation {
  StepModel step = StepModel::simulated;
  std::vector<KnobFit> fit;  // every run fitted (the constants as shipped should be these)
  std::vector<CvCase> cases;
  std::vector<std::string> groups;
  std::vector<ClassInterval> intervals;  // from every residual
  ClassInterval pooled;
  ClassInterval extrapolation;
  double coverage = 0;  // share of step residuals inside the interval built without their group
  int step_cases = 0;
};

/// Leave-one-source-group-out cross-validation of the knobs over `runs`, each prediction's step
/// as `step` reads it (the simulated one: each run's ratio fixed once, with_step_ratios).
CrossValidation cross_validate(const std::vector<PublishedRun>& runs,
                               StepModel step = StepModel::simulated);

}  // namespace shardplan

namespace shardplan {

/// How often the held-out predictions order two plans of one model on one cluster as measured:
/// every pair of step-time cases of one source group with the same model, GPU, GPU count and
/// figure, whose measured figures differ by more than `tie` (a relative gap).
struct PairOrder {
  int pairs = 0;
  int concordant = 0;
  double share() const { return pairs ? static_cast<double>(concordant) / pairs : 0; }
};
PairOrder pair_order(const CrossValidation& cv, double tie = 0.02);

}  // namespace shardplan
