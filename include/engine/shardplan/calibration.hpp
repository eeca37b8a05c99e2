// Calibration as a procedure: every fitted constant of the profiles is a knob (a multiplier on a
// profile figure) with the published runs it is fitted on; fit_knobs() re-derives them, and
// cross_validate() refits them without each source group and predicts that group, so the
// errors it reports are errors on runs the constants never saw. Step-time intervals come from
// those held-out residuals.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardplan/validation.hpp"

namespace shardplan {

/// One fitted constant: a multiplier k on a figure of the profiles, fitted on the runs `trains`
/// selects, changing the runs `applies` selects. It edits a GPU profile (`on_gpu`: every GPU, or
/// the one `gpu_name` names) or a framework profile (`on_stack`: every framework, or
/// `framework_name`), so a fit can be shipped as multipliers the profile readers apply
/// (FittedConstants) and a run's copy can be edited the same way.
struct Knob {
  std::string name;
  std::string figure;  // the profile figure it scales
  /// The multiplier of its prior, read from a run it applies to: the unfitted default, or the
  /// tier above it (a framework's speed on one GPU class shrinks toward its speed on all);
  /// empty: 1.
  std::function<double(const PublishedRun&)> prior;
  std::function<bool(const PublishedRun&)> trains;
  std::function<bool(const PublishedRun&)> applies;
  std::function<void(GpuSpec&, double)> on_gpu;
  std::function<void(FrameworkPricing&, double)> on_stack;
  std::string gpu_name;        // on_gpu: the one GPU profile it edits; empty: every one
  std::string framework_name;  // on_stack: the one framework profile; empty: every one
  /// How far (one standard deviation of log k) the fit may move it from its prior before the
  /// data must pay for it; 0: no prior (the data alone).
  double prior_sigma = 0;
};

/// The knob called `name` (knob_table's names: "gemm_share_of_mamf", "stack torchtitan",
/// "stack megatron x H100", ...); nullptr if no knob has that name.
std::shared_ptr<const Knob> knob_named(const std::string& name);

/// Fitted constants as shipped (profiles/fit/step-time.json) or calibrated on a user's run: each
/// knob's multiplier on the figures the profiles hold, applied when a profile is read.
struct FittedConstant {
  std::string name;
  double multiplier = 1;
  int cases = 0;  // the runs it was fitted on
  std::shared_ptr<const Knob> knob;  // what `name` names (knob_named), resolved once
};
struct FittedConstants {
  std::string source;     // where they come from
  std::string procedure;  // how they were fitted, in words
  std::vector<FittedConstant> constants;
  // A calibration on a user's run (`shardplan calibrate`): the run, in words, and the interval
  // a plan priced through it claims (measured / predicted step - 1), with its basis; empty for
  // the shipped fit.
  std::string run;
  double interval_low = 0, interval_high = 0;
  int interval_cases = 0, interval_groups = 0;  // the calibrated residuals it is taken over
  std::string interval_basis;
  // What the calibrating run spans: a plan beyond it (more GPUs, context parallelism past it,
  // another GEMM type or model kind) takes the framework's beyond-corpus interval and says why.
  CorpusReach reach;
};
/// A GPU profile with the fitted constants that edit it applied (not a probe-calibrated one:
/// its efficiencies are measured).
void apply_fitted(const FittedConstants& fit, GpuSpec& gpu);
/// A framework profile's pricing with the fitted constants that edit it applied.
void apply_fitted(const FittedConstants& fit, const std::string& framework, FrameworkPricing& p);

struct KnobFit {
  std::string name;
  std::string figure;
  double multiplier = 1;   // relative to the shipped value
  int cases = 0;           // training runs it was fitted on (0: the prior)
  double prior = 1;        // the prior's multiplier
  double prior_sigma = 0;  // Knob::prior_sigma
  std::shared_ptr<const Knob> knob;
};

/// `shipped` composed with a fit made on top of it (each multiplier the product): what
/// `validate --cross-validate --write-fit` writes.
FittedConstants compose(const FittedConstants& shipped, const std::vector<KnobFit>& fit,
                        const std::string& source, const std::string& procedure);

/// Every fitted constant for a corpus, in fitting order: the hardware terms every case shares
/// (GEMM share of MAMF, memory-bound and attention efficiency), the fixed costs per layer and
/// MoE layer, the software stack per framework and per (framework, GPU class) the corpus has,
/// and the few terms of one stack (DeepSpeed's pipeline engine and ZeRO-3 shares, the 500 W
/// H100 part). Every multiplier 1.
std::vector<KnobFit> knob_table(const std::vector<PublishedRun>& corpus);

/// The knobs of `fit` that had training runs: the model's free parameters.
int free_parameters(const std::vector<KnobFit>& fit);

/// What the predictions read: the simulated step (what `estimate` reports and the intervals
/// are taken around), or the closed forms alone (the search's bound).
enum class StepModel { simulated, closed_form };

/// `runs` with each simulated_step_ratio still 0 fixed: the chosen plan simulated at the run's
/// own constants (simulated), or 1 (closed_form). A refit then scales the closed form by it.
std::vector<PublishedRun> with_step_ratios(std::vector<PublishedRun> runs, StepModel step);

/// Fits every knob on the step-time runs among `runs` with use[i] set, all at once: weighted
/// least squares in log error (each run weighing 1 / sqrt(its group's cases), Huber beyond
/// 0.3), each knob pulled toward its prior by its prior_sigma, solved by Levenberg-Marquardt in
/// log k. A knob without training runs is its prior. `start` (a fit of the same table) warms
/// the solver, as cross-validation's folds do. Runs without a simulated_step_ratio get theirs
/// first (with_step_ratios, simulated).
std::vector<KnobFit> fit_knobs(const std::vector<PublishedRun>& runs, const std::vector<bool>& use,
                               const std::vector<KnobFit>* start = nullptr);
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
  std::map<std::string, std::vector<KnobFit>> folds;  // per source group, fitted without it
  // Each run's simulated / closed-form step ratio as the folds read it (with_step_ratios), in
  // the order of the runs cross_validate was given.
  std::vector<double> step_ratios;
  int free_parameters = 0;   // knobs fitted on at least one run
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

/// Calibration on a user's own runs (a short run's log): the speed of the runs' stack on their
/// cluster, the "stack <framework> x <GPU class>" constant, fitted on `runs` alone with no prior
/// (the runs carry the constants already applied), so every plan on that stack and GPU class is
/// priced through it. One multiplier per (framework, GPU class) the runs have.
std::vector<KnobFit> calibrate_stack(const std::vector<PublishedRun>& runs);

/// Few-shot validation: each source group predicted by the constants fitted without it, then
/// calibrated (calibrate_stack) on the first `k` step-time runs of each (group, framework, GPU
/// class, model, precision) bucket in file order, and judged on that bucket's runs after its first
/// `evaluated_after` (the same cases for every k <= evaluated_after).
struct FewShot {
  int k = 0;
  std::vector<CvCase> cases;  // the evaluated cases, residual after calibration on k runs
  ClassInterval interval;     // split-conformal over groups of those residuals (all pooled)
  double coverage = 0;        // share inside the interval built without their group
  int buckets = 0;            // (group, stack, GPU class, model, precision) buckets evaluated
};
FewShot few_shot(const std::vector<PublishedRun>& runs, const CrossValidation& cv, int k,
                 int evaluated_after);

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
