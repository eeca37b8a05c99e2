// `shardplan calibrate --log FILE`: the stack's speed on the user's cluster from a short run's
// log, written as a calibration file every planning command takes (--calibration FILE).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <utility>

#include "commands.hpp"
#include "options.hpp"
#include "planning_inputs.hpp"
#include "shardplan/calibration.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/training_log.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {

namespace {

struct CalibrateFlags {
  std::string log;
  std::string output;
};

// Seconds per step of one logged line under the plan: the launchers that print a rate print it
// per device (torchtitan's tps) or for the whole job (DeepSpeed's samples/s).
double seconds_of(const LogStep& s, LogFormat format, const Inputs& in) {
  const double sequences = in.training.global_batch;
  switch (format) {
    case LogFormat::torchtitan:
      return sequences * in.training.seq_len / in.cluster.gpus / s.tokens_per_s;
    case LogFormat::deepspeed:
      return sequences / s.samples_per_s;
    default:
      return s.step_s;
  }
}

// The plan's global batch against the one the log reports (Megatron, NeMo): another number is
// another run.
void check_batch(const TrainingLog& log, const Inputs& in) {
  for (const LogStep& s : log.steps) {
    if (s.global_batch == 0 || s.global_batch == in.training.global_batch) continue;
    throw InputError(
        "--log", fmt::format("{}: line {} reports global batch size {}, the plan has {}: a log "
                             "of another run, or give --global-batch {}",
                             log.source, s.line, s.global_batch, in.training.global_batch,
                             s.global_batch));
  }
}

// The model FLOPs per GPU per step the log implies (its TFLOP/s x its step) against the plan's:
// more than 30% apart, the log is of another model, sequence length or batch.
void check_flops(const TrainingLog& log, const StepSample& sample, double step_s,
                 const Estimate& e, const Inputs& in) {
  std::vector<double> tflops;
  for (const LogStep* s : sample.used)
    if (s->tflops_per_gpu > 0) tflops.push_back(s->tflops_per_gpu);
  if (tflops.empty() || e.throughput.model_flops <= 0) return;
  const double logged = median(tflops) * 1e12 * step_s;
  const double planned = e.throughput.model_flops / in.cluster.gpus;
  const double ratio = logged / planned;
  if (ratio > 0.7 && ratio < 1 / 0.7) return;
  throw InputError(
      "--log",
      fmt::format("{}: its TFLOP/s per GPU x its step time is {:.1f} TFLOP per GPU per step; "
                  "{} at this plan (sequence {}, global batch {}, {} GPUs) does {:.1f}: a log of "
                  "another model, sequence length or batch than the plan describes",
                  log.source, logged / 1e12, in.model.name.empty() ? "the model" : in.model.name,
                  in.training.seq_len, in.training.global_batch, in.cluster.gpus,
                  planned / 1e12));
}

int run_calibrate(const CalibrateFlags& f, PlanningOptions& o) {
  if (f.log.empty()) throw InputError("--log", "give the training log of a short run");
  if (f.output.empty()) throw InputError("--output", "give the calibration file to write");
  if (!o.calibration.empty()) {
    throw InputError("--calibration", "calibrate fits on the profiles as shipped; leave it out "
                                      "(the file it writes replaces the old one)");
  }
  const TrainingLog log = read_training_log(read_text_file(f.log, "--log"), f.log);
  // The global batch the log reports is the run's, unless the flags or the config say one.
  if (o.global_batch.empty() && o.from.empty()) {
    for (const LogStep& s : log.steps)
      if (s.global_batch > 0) o.global_batch = std::to_string(s.global_batch);
  }
  Inputs in = resolve_inputs(o);
  check_batch(log, in);
  const StepSample sample = steady_steps(log);
  if (sample.used.empty()) {
    throw InputError("--log", fmt::format("{}: {} step line(s), and the first carries start-up "
                                          "(initialisation, compilation); log at least 2 steps",
                                          f.log, log.steps.size()));
  }
  std::vector<double> seconds;
  for (const LogStep* s : sample.used) seconds.push_back(seconds_of(*s, log.format, in));
  const double measured = median(seconds);
  const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
  const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
  check_flops(log, sample, measured, e, in);

  PublishedRun run;
  run.id = "calibration run";
  run.source = f.log;
  run.source_group = "calibration";
  run.model = in.model;
  run.cluster = in.cluster;
  run.training = in.training;
  run.plan = in.plan;
  run.metric = Metric::iteration_time_s;
  run.measured = measured;
  const Prediction before = predict(run);
  const std::vector<KnobFit> fit = calibrate_stack({run});
  if (fit.empty()) {
    throw InputError("--cluster", "the GPU has no accuracy class (profile accuracy_class): "
                                  "there is no stack speed to calibrate on it");
  }
  const Prediction after = predict(with_knobs(run, fit));

  // The interval of a plan calibrated on one run: validate --cross-validate --calibrate-with 1's
  // held-out calibrated residuals, which the build ships with its fit (profiles/fit).
  const FittedConstants& shipped = shipped_fit();
  FittedConstants out;
  out.source = fmt::format("shardplan calibrate --log {}", f.log);
  out.procedure =
      "the stack's speed on this GPU class (the 'stack <framework> x <GPU class>' constant) "
      "fitted with no prior on the logged run: least squares in log(predicted / measured step) "
      "(src/engine/calibration.cpp calibrate_stack), on top of the constants this build ships";
  for (const KnobFit& k : fit) out.constants.push_back({k.name, k.multiplier, 1, k.knob});
  out.run = fmt::format(
      "{} log {}: {} of {} steps (the first {} skipped as warm-up), median {:.4g} s per step "
      "(min {:.4g}, max {:.4g}); {} on {} x {}, plan {}",
      to_string(log.format), f.log, sample.used.size(), log.steps.size(), sample.skipped,
      measured, *lo, *hi, in.model.name.empty() ? "the model" : in.model.name, in.cluster.gpus,
      in.cluster.gpu.name, describe(in.plan));
  out.interval_low = shipped.interval_low;
  out.interval_high = shipped.interval_high;
  out.interval_basis = shipped.interval_basis;
  out.interval_cases = shipped.interval_cases;
  out.interval_groups = shipped.interval_groups;
  out.reach.add(plan_scope(in.model, in.training, in.plan, in.cluster));
  write_file_atomically(f.output, fitted_to_text(out), "--output");

  const double spread = *hi / *lo - 1;
  if (o.json) {
    nlohmann::json j = {
        {"log", {{"file", f.log},
                 {"format", to_string(log.format)},
                 {"steps", log.steps.size()},
                 {"steps_used", sample.used.size()},
                 {"steps_skipped", sample.skipped},
                 {"step_s", {{"median", measured}, {"min", *lo}, {"max", *hi}}},
                 {"max_allocated_gib", log.max_allocated_gib},
                 {"max_reserved_gib", log.max_reserved_gib}}},
        {"predicted_step_s", before.predicted},
        {"datasheet_error", before.error},
        {"calibrated_step_s", after.predicted},
        {"constants", nlohmann::json::array()},
        {"interval", {{"low", out.interval_low}, {"high", out.interval_high},
                      {"basis", out.interval_basis}}},
        {"output", f.output}};
    for (const KnobFit& k : fit) j["constants"].push_back({{"name", k.name}, {"multiplier", k.multiplier}});
    add_inputs_json(j, in);
    print_json(std::move(j));
    return 0;
  }
  std::cout << describe_inputs(in);
  std::cout << fmt::format(
      "log       {} ({}): {} step lines, the first {} skipped as warm-up, {} used\n"
      "measured  {:.4g} s per step (median; min {:.4g}, max {:.4g}, spread {:.1f}%)\n",
      f.log, to_string(log.format), log.steps.size(), sample.skipped, sample.used.size(),
      measured, *lo, *hi, spread * 100);
  if (spread > 0.2)
    std::cout << "warning: the steps used differ by more than 20%: a log of steady steps "
                 "calibrates better (drop warm-up, evaluation and checkpoint steps)\n";
  if (log.format == LogFormat::hf_trainer)
    std::cout << "note: the Trainer's train_steps_per_second counts the whole run, start-up "
                 "included: the calibration is as slow as that\n";
  if (log.max_reserved_gib > 0) {
    std::cout << fmt::format("memory    the log's peak: {:.2f} GiB allocated, {:.2f} GiB reserved; "
                             "predicted {:.2f} GiB\n",
                             log.max_allocated_gib, log.max_reserved_gib,
                             e.memory.total_bytes() / kGiB);
  }
  std::cout << fmt::format(
      "predicted {:.4g} s per step from the profiles: {:+.1f}% against the log\n",
      before.predicted, before.error * 100);
  for (const KnobFit& k : fit)
    std::cout << fmt::format("fitted    {} x {:.3f} (the stack's compute speed on this GPU "
                             "class)\n",
                             k.name, k.multiplier);
  std::cout << fmt::format("calibrated {:.4g} s per step for this run\n", after.predicted);
  std::cout << fmt::format(
      "interval  {:+.1f}% to {:+.1f}% for plans calibrated this way ({})\n", out.interval_low * 100,
      out.interval_high * 100, out.interval_basis);
  std::cout << fmt::format(
      "wrote     {}: give it to estimate, plan, provision, runbook and emit as --calibration {}\n",
      f.output, f.output);
  return 0;
}

}  // namespace

Runner setup_calibrate(CLI::App& sub) {
  auto f = std::make_shared<CalibrateFlags>();
  auto o = add_planning_options(sub);
  sub.add_option("--log", f->log,
                 "The training log of a short run: Megatron-LM / Megatron-Bridge, NeMo 2, "
                 "torchtitan, DeepSpeed (ThroughputTimer lines) or the Hugging Face Trainer's "
                 "final metrics")
      ->required();
  sub.add_option("-o,--output", f->output, "The calibration file to write")->required();
  return [f, o]() { return run_calibrate(*f, *o); };
}

}  // namespace shardplan::cli
