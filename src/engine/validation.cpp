// Predictions of published runs. An unknown micro-batch size is chosen as the fastest that fits,
// as the papers' authors tuned it; an unknown interleaving is the framework default (none).
#include "shardplan/validation.hpp"

#include <algorithm>
#include <cmath>

#include "shardplan/memory.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

const char* to_string(Metric m) {
  switch (m) {
    case Metric::iteration_time_s:
      return "iteration_time_s";
    case Metric::tflops_per_gpu:
      return "tflops_per_gpu";
    case Metric::layer_fwd_bwd_ms:
      return "layer_fwd_bwd_ms";
    case Metric::activations_gib:
      return "activations_gib";
    case Metric::tokens_per_s_per_gpu:
      return "tokens_per_s_per_gpu";
    case Metric::model_tflops_per_gpu:
      return "model_tflops_per_gpu";
  }
  return "";
}

namespace {

double predicted_value(const PublishedRun& run, const ParallelPlan& p, bool* fits) {
  const ModelSpec& m = run.model;
  const TrainingSpec& tr = run.training;
  const ClusterSpec& c = run.cluster;
  switch (run.metric) {
    case Metric::activations_gib: {
      const MemoryBreakdown mem = estimate_memory(m, tr, p, c);
      *fits = true;
      return mem.stages.front().layer_activations_bytes / kGiB;
    }
    case Metric::layer_fwd_bwd_ms: {
      const MicroBatchCost cost = micro_batch_cost(m, tr, p, c);
      double rec = 0;
      if (p.recompute == Recompute::full) rec = cost.layer.forward_s;
      if (p.recompute == Recompute::selective) rec = cost.layer.selective_s;
      const double tp =
          (p.recompute == Recompute::full ? 2.0 : 1.0) * cost.tp_forward_s + cost.tp_backward_s;
      // The layer's fixed cost per micro-batch (step_time.cpp), its forward third again when
      // recomputed in full.
      const FrameworkPricing& fp = tr.framework.pricing;
      const double fixed = fp.fixed_cost_s(1, m.is_moe() ? 1 : 0, tr.cuda_graphs) *
                           (p.recompute == Recompute::full ? 4.0 / 3.0 : 1.0);
      *fits = true;
      return (cost.layer.forward_s + cost.layer.backward_s + rec + tp + fixed) * 1e3;
    }
    case Metric::iteration_time_s:
    case Metric::tflops_per_gpu:
    case Metric::tokens_per_s_per_gpu:
    case Metric::model_tflops_per_gpu: {
      // The closed forms choose among the candidate plans (the search's bound); predict()
      // simulates the chosen one (step_ratio_of).
      const Estimate e = estimate(m, tr, p, c, Simulation::skip);
      *fits = e.memory.fits;
      if (run.metric == Metric::iteration_time_s) return e.time.step_s;
      if (run.metric == Metric::tokens_per_s_per_gpu) return e.throughput.tokens_per_s / c.gpus;
      if (run.metric == Metric::model_tflops_per_gpu) return e.throughput.tflops_per_gpu;
      return e.throughput.hardware_flops / (e.time.step_s * c.gpus) / 1e12;
    }
  }
  return 0;
}

bool is_step_figure(Metric m) {
  return m == Metric::iteration_time_s || m == Metric::tflops_per_gpu ||
         m == Metric::tokens_per_s_per_gpu || m == Metric::model_tflops_per_gpu;
}

// The chosen plan's simulated step over its closed-form one: the run's fixed ratio where a refit
// set one, else the plan simulated (its parts only, no event list).
double step_ratio_of(const PublishedRun& run, const ParallelPlan& p) {
  if (!is_step_figure(run.metric)) return 1;
  if (run.simulated_step_ratio > 0) return run.simulated_step_ratio;
  const Estimate e = estimate(run.model, run.training, p, run.cluster, Simulation::figures);
  return e.step_simulated && e.time.step_s > 0 ? e.step_s / e.time.step_s : 1;
}

// A figure of the closed-form step read from the simulated step: a time scales with the step,
// a throughput with its inverse.
double from_simulated_step(Metric m, double closed_form, double ratio) {
  return m == Metric::iteration_time_s ? closed_form * ratio : closed_form / ratio;
}

}  // namespace

namespace {

// Every plan the source allows: its stated fields, and each choice of the ones it leaves out.
std::vector<ParallelPlan> candidate_plans(const PublishedRun& run) {
  const int per_replica = run.training.global_batch / std::max(1, run.plan.dp);
  const std::vector<int> micro =
      run.micro_batch_known ? std::vector<int>{run.plan.micro_batch} : divisors(per_replica, 16);
  // An unstated interleaving is Megatron-LM's default schedule (plain 1F1B): interleaving needs
  // a flag the papers would have reported.
  std::vector<int> interleave{run.interleave_known ? run.plan.interleave : 1};
  if (run.interleaved) {
    interleave = divisors(run.model.layers / run.plan.pp, 16);
    std::erase(interleave, 1);
  }
  // An unstated recompute is chosen like the micro-batch: the fastest that fits, Megatron-Core's
  // module sets among them where the stack recomputes by module (as the search does).
  std::vector<std::pair<Recompute, unsigned>> recompute{
      {run.plan.recompute, run.plan.recompute_modules}};
  if (!run.recompute_known) {
    recompute = {{Recompute::none, 0}, {Recompute::selective, 0}, {Recompute::full, 0}};
    if (run.training.framework.caps.recompute_modules) {
      for (unsigned modules : recompute_module_sets(run.model))
        recompute.emplace_back(Recompute::selective, modules);
    }
  }
  std::vector<ParallelPlan> out;
  for (int b : micro) {
    for (int v : interleave) {
      for (const auto& [rc, modules] : recompute) {
        ParallelPlan p = run.plan;
        p.micro_batch = b;
        p.interleave = v;
        p.recompute = rc;
        p.recompute_modules = modules;
        out.push_back(p);
      }
    }
  }
  return out;
}

}  // namespace

Prediction predict(const PublishedRun& run) {
  Prediction best;
  best.run = &run;
  const bool faster_is_smaller = run.metric == Metric::iteration_time_s ||
                                 run.metric == Metric::layer_fwd_bwd_ms ||
                                 run.metric == Metric::activations_gib;
  bool have = false;
  for (const ParallelPlan& p : candidate_plans(run)) {
    if (!check_plan(run.model, run.training, p, run.cluster).empty()) continue;
    bool fits = true;
    const double value = predicted_value(run, p, &fits);
    const bool better = !have || (fits && !best.fits) ||
                        (fits == best.fits &&
                         (faster_is_smaller ? value < best.predicted : value > best.predicted));
    if (better) {
      best.plan = p;
      best.predicted = value;
      best.fits = fits;
      have = true;
    }
  }
  if (have) {
    const MemoryBreakdown mem = estimate_memory(run.model, run.training, best.plan, run.cluster);
    const StageMemory& worst = mem.worst();  // a reference into mem, which must outlive it
    best.predicted_peak_gib =
        (run.peak_is_reserved ? worst.total_bytes() : worst.allocated_bytes()) / kGiB;
  }
  best.closed_form = best.predicted;
  if (have) {
    best.step_ratio = step_ratio_of(run, best.plan);
    best.predicted = from_simulated_step(run.metric, best.closed_form, best.step_ratio);
  }
  const auto error_of = [&run](double v) {
    return run.measured != 0 ? (v - run.measured) / run.measured : 0;
  };
  best.error = error_of(best.predicted);
  best.closed_form_error = error_of(best.closed_form);
  return best;
}

ValidationSummary summarize(std::vector<Prediction> cases) {
  ValidationSummary s;
  s.cases = std::move(cases);
  for (const auto& c : s.cases) {
    s.mean_abs_error += std::fabs(c.error);
    s.max_abs_error = std::max(s.max_abs_error, std::fabs(c.error));
  }
  if (!s.cases.empty()) s.mean_abs_error /= s.cases.size();
  return s;
}

}  // namespace shardplan

namespace shardplan {

VerdictPrediction predict_verdict(const MemoryVerdictCase& c) {
  const PublishedRun& r = c.run;
  const MemoryBreakdown mem = estimate_memory(r.model, r.training, r.plan, r.cluster);
  const StageMemory& worst = mem.worst();
  VerdictPrediction v;
  v.c = &c;
  v.reserved_bytes = worst.total_bytes();
  v.allocated_bytes = worst.allocated_bytes();
  v.capacity_bytes = r.cluster.gpu.memory_bytes;
  return v;
}

VerdictMatrix confusion(const std::vector<VerdictPrediction>& preds, double headroom_share) {
  VerdictMatrix m;
  for (const VerdictPrediction& v : preds) {
    const bool fits = v.fits(headroom_share);
    (v.c->ran ? (fits ? m.fits_ran : m.nofit_ran) : (fits ? m.fits_oom : m.nofit_oom)) += 1;
  }
  return m;
}

double headroom_share_without_false_fits(const std::vector<VerdictPrediction>& preds) {
  double share = 0;
  for (const VerdictPrediction& v : preds)
    if (!v.c->ran) share = std::max(share, std::nextafter(v.free_share(), 2.0));
  return share;
}

}  // namespace shardplan
