// Accuracy against published training runs: predict each run's measured figure and report the
// error per case and in aggregate.
#pragma once

#include <string>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

enum class Metric {
  iteration_time_s,  // seconds per optimizer step
  tflops_per_gpu,    // hardware TFLOP/s per GPU as the source counts them (full recompute)
  layer_fwd_bwd_ms,  // one transformer layer's forward + backward (+ recompute), milliseconds
  activations_gib,   // first-stage transformer-layer activations (analytic references)
  tokens_per_s_per_gpu,
  model_tflops_per_gpu,  // model FLOPs (PaLM / Korthikanti Eq. 7 convention) per second per GPU
};
const char* to_string(Metric m);

/// A published run with its plan; unknown plan fields are 0 and chosen by the predictor.
struct PublishedRun {
  std::string id;
  std::string source;
  /// Runs from one table or paper form one group: cross-validation leaves a group out whole.
  std::string source_group;
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  bool micro_batch_known = true;
  bool recompute_known = true;  // false: the source does not say; the predictor chooses
  bool interleave_known = true;
  bool interleaved = false;  // the source says "interleaved" without the degree
  Metric metric = Metric::iteration_time_s;
  double measured = 0;
  bool held_out = false;         // "split": "held-out": no profile figure was fitted on it
  /// The source's own caveats on this figure ("source_flags": a known regression it names,
  /// with the source's words and where they are). `validate` predicts a flagged run and
  /// reports it apart: it is never fitted on and never counted in the aggregate errors.
  std::vector<std::string> source_flags;
  double measured_peak_gib = 0;  // the peak device memory the source publishes; 0 = none
  // What that peak counts: the caching allocator's reserved memory (torch.cuda.
  // max_memory_reserved, torchtitan's logged "memory") or the tensors allocated
  // (max_memory_allocated); validation compares the matching prediction.
  bool peak_is_reserved = true;
  /// The chosen plan's simulated step over its closed-form step, fixed before a refit
  /// (with_step_ratios, calibration.hpp): the knobs scale compute and communication speeds,
  /// which move the ratio little (bench/simulate_accuracy measures how little), so a fit reads
  /// the closed form times this instead of simulating every trial. 0: predict() simulates.
  double simulated_step_ratio = 0;
};

struct Prediction {
  const PublishedRun* run = nullptr;
  ParallelPlan plan;  // as predicted, with unknown fields chosen
  /// From the simulated step (Estimate::step_s), as `estimate` reports it; figures that are
  /// not step times (activations, one layer's passes) are the closed forms'.
  double predicted = 0;
  double error = 0;               // (predicted - measured) / measured
  double closed_form = 0;         // the same figure from the closed-form step (StepTime::step_s)
  double closed_form_error = 0;   // (closed_form - measured) / measured
  double step_ratio = 1;          // simulated / closed-form step of the plan (1: not simulated)
  bool fits = true;               // the chosen plan fits memory
  double predicted_peak_gib = 0;  // the chosen plan's peak device memory (worst stage)
};

/// Predicts one run. Where the source omits the micro-batch or the activation recompute, the
/// predictor takes the fastest that fits memory, as the authors would have tuned it (recompute
/// none, then selective, then full); an omitted interleaving is none,
/// Megatron-LM's default schedule, and "interleaved" without a degree takes the fastest degree.
/// The plan is chosen by the closed forms (the search's bound); the chosen plan's step is then
/// simulated (Simulation::figures), or read as its closed form times the run's
/// simulated_step_ratio where one is set.
Prediction predict(const PublishedRun& run);

struct ValidationSummary {
  std::vector<Prediction> cases;
  double mean_abs_error = 0;
  double max_abs_error = 0;
};
ValidationSummary summarize(std::vector<Prediction> cases);

/// One layout of a published sweep that either ran or ran out of memory: a fit verdict to check.
struct MemoryVerdictCase {
  PublishedRun run;    // model, cluster, training and plan exactly as the row states them
  std::string sweep;   // the sweep's id (one sheet of the source)
  std::string kernel;  // the source's kernel label (attention and norm implementation)
  bool ran = true;     // false: the source reports the layout out of memory
};

/// What shardplan says of one such layout: its worst stage's peak, reserved (what the device
/// must hold) and allocated, against the device's capacity.
struct VerdictPrediction {
  const MemoryVerdictCase* c = nullptr;
  double reserved_bytes = 0;
  double allocated_bytes = 0;
  double capacity_bytes = 0;
  /// The share of the device's memory the peak leaves free (below 0: over by that much).
  double free_share() const { return 1 - reserved_bytes / capacity_bytes; }
  /// Fits with `headroom_share` of the device's memory kept free. Judged on free_share() so
  /// that the least headroom without false fits (one layout's own free share, a hair above)
  /// judges that layout the same way bit for bit.
  bool fits(double headroom_share) const { return free_share() >= headroom_share; }
};
VerdictPrediction predict_verdict(const MemoryVerdictCase& c);

/// The fit verdicts against the outcomes with a headroom of `headroom_share` of each device.
struct VerdictMatrix {
  int fits_ran = 0;   // right
  int fits_oom = 0;   // false "fits": the job would have been lost
  int nofit_ran = 0;  // false "does not fit": a plan ruled out that ran
  int nofit_oom = 0;  // right
  int total() const { return fits_ran + fits_oom + nofit_ran + nofit_oom; }
  double right() const { return total() ? double(fits_ran + nofit_oom) / total() : 0; }
};
VerdictMatrix confusion(const std::vector<VerdictPrediction>& preds, double headroom_share);
/// The smallest headroom, as a share of each device's memory, at which no layout that ran out
/// of memory is said to fit (0 when none is at no headroom).
double headroom_share_without_false_fits(const std::vector<VerdictPrediction>& preds);

}  // namespace shardplan
