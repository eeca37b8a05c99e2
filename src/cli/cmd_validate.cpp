// `shardplan validate [FILE]`: predicts every published run and prints predicted vs measured.

#include <fmt/format.h>

#include <iostream>
#include <utility>

#include "commands.hpp"
#include "options.hpp"
#include "shardplan/calibration.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/render_calibration.hpp"
#include "shardplan/render_validate.hpp"
#include "shardplan/validation.hpp"

namespace shardplan::cli {

namespace {

// "korthikanti22-t5-22B-fullrecompute" -> "korthikanti22-t5"; held-out runs form one group.
std::string group_of(const std::string& id) {
  if (id.rfind("holdout: ", 0) == 0) return "held out (not tuned on)";
  const auto first = id.find('-');
  const auto second = first == std::string::npos ? first : id.find('-', first + 1);
  return second == std::string::npos ? id : id.substr(0, second);
}

struct ValidateFlags {
  std::string file;
  std::string only;
  PlanningOptions cluster;
  bool json = false;
  bool cross_validate = false;
  bool markdown = false;
  bool markdown_groups = false;
  std::string write_fit;
  int calibrate_with = 0;
};

// The file's runs (every one counted), or by default the shipped corpus with the held-out runs
// marked as such.
ShippedCorpus load_runs(const ValidateFlags& f) {
  ClusterOptions co;
  co.cluster = f.cluster.cluster;
  if (!f.file.empty()) {
    ShippedCorpus out;
    out.counted = load_published_runs(read_text_file(f.file, "file"), f.file, co);
    // An empty array has nothing to validate; saying so beats a complaint about --only.
    if (out.counted.empty()) {
      throw InputError("file", "'" + f.file +
                                   "' holds no runs; give a JSON array of runs, each with "
                                   "model, hardware, plan and measured");
    }
    return out;
  }
  ShippedCorpus out = load_shipped_corpus(co);
  for (auto* runs : {&out.counted, &out.flagged})
    for (PublishedRun& r : *runs)
      if (r.held_out) r.id = "holdout: " + r.id;
  return out;
}

// The counted runs --only picks, by source group. `matched_elsewhere`: --only picked a sweep row
// or a flagged run, so an empty pick here is no error.
ValidationReport predict_runs(const std::vector<PublishedRun>& runs, const std::string& only,
                              bool matched_elsewhere) {
  ValidationReport out;
  for (const PublishedRun& run : runs) {
    if (!only.empty() && run.id.rfind(only, 0) != 0) continue;
    const std::string g = group_of(run.id);
    if (!out.groups.count(g)) out.order.push_back(g);
    out.groups[g].push_back(predict(run));
    FrameworkErrors& f = out.by_framework[profile_of(run)];
    (run.held_out ? f.held_out : f.fitted).push_back(out.groups[g].back());
  }
  if (out.order.empty() && !matched_elsewhere)
    throw InputError("--only", "no run id starts with '" + only + "'");
  return out;
}

// The runs whose source flags their figure (PublishedRun::source_flags) that --only picks,
// predicted by the shipped constants: shown apart, never fitted on or counted.
std::vector<Prediction> predict_flagged(const std::vector<PublishedRun>& flagged,
                                        const std::string& only) {
  std::vector<Prediction> out;
  for (const PublishedRun& run : flagged)
    if (only.empty() || run.id.rfind(only, 0) == 0) out.push_back(predict(run));
  return out;
}

int run_validate(const ValidateFlags& f) {
  // The runs every figure counts, and those their source flags; the predictions point into both.
  const ShippedCorpus corpus = load_runs(f);
  const std::vector<PublishedRun>& runs = corpus.counted;
  if (f.markdown && !f.cross_validate)
    throw InputError("--markdown", "goes with --cross-validate (the accuracy paragraph it prints)");
  if (f.markdown_groups && !f.cross_validate)
    throw InputError("--markdown-groups",
                     "goes with --cross-validate (the validation doc's tables it prints)");
  if (f.calibrate_with != 0 && !f.cross_validate)
    throw InputError("--calibrate-with", "goes with --cross-validate (the folds it calibrates)");
  if (f.calibrate_with < 0 || f.calibrate_with > 5)
    throw InputError("--calibrate-with",
                     "is the number of calibration runs per bucket; give 1 to 5");
  if (!f.write_fit.empty() && !f.cross_validate)
    throw InputError("--write-fit", "goes with --cross-validate (the fit it writes)");
  const std::vector<Prediction> flagged = predict_flagged(corpus.flagged, f.only);
  if (f.cross_validate) {
    std::vector<PublishedRun> picked;
    for (const PublishedRun& r : runs)
      if (f.only.empty() || r.id.rfind(f.only, 0) == 0) picked.push_back(r);
    if (picked.empty()) {
      throw InputError("--only",
                       "no run id starts with '" + f.only + "'" +
                           (flagged.empty() ? ""
                                            : " but runs their source flags, which are "
                                              "not cross-validated: drop --cross-validate"));
    }
    // The simulated step, and the closed forms alone beside it (fitted the same way).
    const CrossValidation cv = cross_validate(picked, StepModel::simulated);
    const CrossValidation closed = cross_validate(picked, StepModel::closed_form);
    if (!f.write_fit.empty()) {
      FittedConstants fit = compose(
          shipped_fit(), cv.fit,
          fmt::format("shardplan validate --cross-validate --write-fit on {} runs ({} with a "
                      "step-time figure) in {} source groups{}",
                      picked.size(), cv.step_cases, cv.groups.size(),
                      f.file.empty() ? std::string(" (profiles/validation)") : " (" + f.file + ")"),
          "every constant fitted at once on every step-time run: least squares in log(predicted "
          "/ measured step), each run weighing 1 / sqrt(its source group's runs), Huber beyond "
          "0.3, each constant pulled toward its prior by its stated spread, Levenberg-Marquardt "
          "in log multiplier (src/engine/calibration.cpp fit_knobs); each multiplier is on the "
          "figure the profiles hold, composed with the constants the build shipped");
      // The interval a plan calibrated on one run of its model claims (`shardplan calibrate`
      // writes it into the user's file): the held-out calibrated residuals, few-shot K = 1.
      const FewShot shot = few_shot(picked, cv, 1, 1);
      fit.interval_low = shot.interval.low;
      fit.interval_high = shot.interval.high;
      fit.interval_cases = shot.interval.cases;
      fit.interval_groups = shot.interval.groups;
      fit.interval_basis = shot.interval.basis;
      write_file_atomically(f.write_fit, fitted_to_text(fit), "--write-fit");
      std::cerr << "wrote " << f.write_fit << " (" << fit.constants.size()
                << " constants); rebuild to ship them\n";
    }
    std::vector<FewShot> shots;
    for (int k = 0; k <= f.calibrate_with && f.calibrate_with > 0; ++k)
      shots.push_back(few_shot(picked, cv, k, f.calibrate_with));
    if (f.json) {
      nlohmann::json j = to_json(cv, closed);
      if (!shots.empty()) j["few_shot"] = few_shot_json(shots);
      j["flagged"] = flagged_json(flagged);
      print_json(std::move(j));
    } else if (!shots.empty() && !f.markdown && !f.markdown_groups)
      std::cout << render_cross_validation(cv, closed) << "\n"
                << render_few_shot(shots) << flagged_text(flagged);
    else if (f.markdown_groups)
      std::cout << group_table_markdown(cv, closed);
    else if (f.markdown)
      std::cout << accuracy_paragraph(cv, closed);
    else
      std::cout << render_cross_validation(cv, closed) << flagged_text(flagged);
    return 0;
  }
  // The published sweeps' fit verdicts go with the shipped corpus (a FILE is the user's runs).
  std::vector<MemoryVerdictCase> sweeps;
  if (f.file.empty())
    sweeps = load_memory_sweeps(default_memory_sweeps(), "profiles/validation/memory-sweeps.json");
  std::vector<const MemoryVerdictCase*> picked;
  for (const MemoryVerdictCase& c : sweeps)
    if (f.only.empty() || c.run.id.rfind(f.only, 0) == 0) picked.push_back(&c);
  ValidationReport report = predict_runs(runs, f.only, !picked.empty() || !flagged.empty());
  report.flagged = flagged;
  for (const MemoryVerdictCase* c : picked) {
    report.verdicts.push_back(predict_verdict(*c));
    if (c->ran) report.sweep_steps.push_back({c, predict(c->run)});
  }
  if (f.json) {
    print_json(to_json(report));
  } else {
    std::cout << render_validation(report);
  }
  return 0;
}

}  // namespace

Runner setup_validate(CLI::App& sub) {
  auto f = std::make_shared<ValidateFlags>();
  sub.add_option(
      "file", f->file,
      "Published-runs JSON (default: profiles/validation/published-runs.json, the runs the "
      "efficiencies were fitted on, then holdout-runs.json, runs they were not)");
  sub.add_option("--only", f->only, "Only runs whose id starts with this");
  sub.add_option("--cluster", f->cluster.cluster,
                 "Cluster to run every case on (default: each run's hardware)");
  sub.add_flag("--json", f->json, "Print JSON");
  sub.add_flag("--cross-validate", f->cross_validate,
               "Refit every fitted constant without each source group and predict that group: "
               "leave-one-source-group-out errors, the 80% intervals and their coverage");
  sub.add_flag("--markdown", f->markdown,
               "With --cross-validate: the README's accuracy paragraph, generated");
  sub.add_flag("--markdown-groups", f->markdown_groups,
               "With --cross-validate: the validation doc's held-out errors, closed form against "
               "simulated step, per source group and for the pipeline-heavy and MoE cases");
  sub.add_option("--calibrate-with", f->calibrate_with,
                 "With --cross-validate: few-shot validation, each held-out group calibrated on "
                 "its first K runs per stack and cluster (what `shardplan calibrate` does with a "
                 "short run's log), K = 0 .. this, judged on the same later runs");
  sub.add_option("--write-fit", f->write_fit,
                 "With --cross-validate: write the full fit's constants (composed with the ones "
                 "this build ships) to this file, e.g. profiles/fit/step-time.json");
  return [f]() { return run_validate(*f); };
}

}  // namespace shardplan::cli
