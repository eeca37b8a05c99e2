// Renderers for cross-validation: every figure is read from a CrossValidation the engine made.
#include "shardplan/render_calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "shardplan/table.hpp"
#include "shardplan/units.hpp"
#include "reach_fields.hpp"

namespace shardplan {
namespace {

struct ErrorStats {
  int cases = 0;
  double mean = 0, median = 0, max = 0;  // of |error|
  double in_sample_mean = 0;
  // Of measured step / predicted step - 1: above 0 the prediction is too fast.
  double median_signed = 0;
  int too_fast = 0;
};

ErrorStats stats_of(const std::vector<const CvCase*>& cases) {
  ErrorStats s;
  std::vector<double> abs, signed_residuals;
  for (const CvCase* c : cases) {
    abs.push_back(std::fabs(c->cv_error));
    s.in_sample_mean += std::fabs(c->in_sample_error);
    signed_residuals.push_back(c->residual);
    s.too_fast += c->residual > 0 ? 1 : 0;
  }
  s.median_signed = median(signed_residuals);
  s.cases = static_cast<int>(abs.size());
  if (abs.empty()) return s;
  std::sort(abs.begin(), abs.end());
  for (double a : abs) s.mean += a;
  s.mean /= abs.size();
  s.in_sample_mean /= abs.size();
  s.max = abs.back();
  s.median = median(abs);
  return s;
}

// What the step-time cases are grouped by: their source group, their accuracy class
// ("megatron H100"), or their GPU generation and precision recipe ("GB200 mxfp8").
using CaseKey = std::string (*)(const CvCase&);
std::string group_key(const CvCase& c) { return c.group; }
std::string class_key(const CvCase& c) { return c.cls; }
std::string generation_precision_key(const CvCase& c) {
  const GpuSpec& g = c.run->cluster.gpu;
  return fmt::format("{} {}", g.accuracy_class.empty() ? g.name : g.accuracy_class,
                     c.run->training.recipe.name);
}

// The slices the step-time error is reported over: framework, GPU generation, precision recipe,
// dense or MoE, and GPU count.
std::string framework_key(const CvCase& c) {
  const std::string& f = c.run->training.framework.name;
  return "framework " + (f.empty() ? std::string("none") : f);
}
std::string generation_key(const CvCase& c) {
  return "GPU " + c.run->cluster.gpu.generation;
}
std::string precision_key(const CvCase& c) { return "precision " + c.run->training.recipe.name; }
std::string kind_key(const CvCase& c) { return c.run->model.experts > 0 ? "MoE" : "dense"; }
std::string gpus_key(const CvCase& c) {
  const int n = c.run->cluster.gpus;
  return n <= 8 ? "1-8 GPUs" : n <= 64 ? "9-64 GPUs" : n <= 256 ? "65-256 GPUs" : "> 256 GPUs";
}

// Step-time cases keyed by `key`, in first-seen order.
std::vector<std::pair<std::string, std::vector<const CvCase*>>> step_cases_by(
    const CrossValidation& cv, CaseKey key_of) {
  std::vector<std::pair<std::string, std::vector<const CvCase*>>> out;
  for (const CvCase& c : cv.cases) {
    if (!c.step) continue;
    const std::string key = key_of(c);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == key; });
    if (it == out.end()) {
      out.push_back({key, {}});
      it = out.end() - 1;
    }
    it->second.push_back(&c);
  }
  return out;
}

// The stats of the cases keyed `key` in `cv` (the closed-form cross-validation's row beside the
// simulated one's).
ErrorStats stats_for(const CrossValidation& cv, const std::string& key, CaseKey key_of) {
  for (const auto& [name, cases] : step_cases_by(cv, key_of))
    if (name == key) return stats_of(cases);
  return {};
}

// Peak device memory: the held-out predictions against the sources' peaks, as they count them.
struct PeakStats {
  const char* what;
  std::vector<double> errors;  // predicted / measured - 1
  double mean_abs() const {
    double sum = 0;
    for (double e : errors) sum += std::fabs(e);
    return errors.empty() ? 0 : sum / static_cast<double>(errors.size());
  }
  double max_abs() const {
    double m = 0;
    for (double e : errors) m = std::max(m, std::fabs(e));
    return m;
  }
  double mean() const {  // signed: below 0, the peaks are under-predicted on average
    double sum = 0;
    for (double e : errors) sum += e;
    return errors.empty() ? 0 : sum / static_cast<double>(errors.size());
  }
  int under() const {
    return static_cast<int>(
        std::count_if(errors.begin(), errors.end(), [](double e) { return e < 0; }));
  }
};

std::vector<PeakStats> peak_stats(const CrossValidation& cv) {
  std::vector<PeakStats> rows = {{"allocated", {}}, {"reserved", {}}, {"all", {}}};
  for (const CvCase& c : cv.cases) {
    if (!c.peak) continue;
    rows[c.run->peak_is_reserved ? 1 : 0].errors.push_back(c.peak_error);
    rows[2].errors.push_back(c.peak_error);
  }
  return rows;
}

int groups_in(const std::vector<const CvCase*>& cases) {
  std::set<std::string> g;
  for (const CvCase* c : cases) g.insert(c->group);
  return static_cast<int>(g.size());
}

std::string pct(double x) { return fmt::format("{:.1f}%", x * 100); }

// A class's own interval, or the pooled one when all its cases come from one group.
const ClassInterval* interval_of(const CrossValidation& cv, const std::string& cls) {
  for (const ClassInterval& ci : cv.intervals)
    if (ci.cls == cls) return &ci;
  return &cv.pooled;
}

nlohmann::json stats_json(const ErrorStats& s) {
  return {{"cases", s.cases},
          {"in_sample_mean_abs_error", s.in_sample_mean},
          {"mean_abs_error", s.mean},
          {"median_abs_error", s.median},
          {"max_abs_error", s.max},
          {"median_signed_error", s.median_signed},
          {"too_fast", s.too_fast}};
}

int covered_in(const std::vector<const CvCase*>& cases) {
  return static_cast<int>(
      std::count_if(cases.begin(), cases.end(), [](const CvCase* c) { return c->covered; }));
}

// "dense runs 217 of 230 (94.3%), mixtures of experts 126 of 155 (81.3%)": the coverage of each
// model kind, whose classes are apart.
std::string coverage_by_kind(const CrossValidation& cv) {
  int covered[2] = {0, 0}, steps[2] = {0, 0};
  for (const CvCase& c : cv.cases) {
    if (!c.step || !c.run) continue;
    const int moe = c.run->model.experts > 0 ? 1 : 0;
    ++steps[moe];
    covered[moe] += c.covered ? 1 : 0;
  }
  auto share = [](int n, int of) { return of ? static_cast<double>(n) / of : 0.0; };
  return fmt::format("dense runs {} of {} ({}), mixtures of experts {} of {} ({})", covered[0],
                     steps[0], pct(share(covered[0], steps[0])), covered[1], steps[1],
                     pct(share(covered[1], steps[1])));
}

std::vector<const CvCase*> all_steps(const CrossValidation& cv) {
  std::vector<const CvCase*> out;
  for (const CvCase& c : cv.cases)
    if (c.step) out.push_back(&c);
  return out;
}

int covered_count(const CrossValidation& cv) { return covered_in(all_steps(cv)); }

// What a class's runs span, as the README table prints it: "dense, MoE (mamba2 layers too); bf16,
// fp8; CP <= 8; <= 16384 GPUs".
std::string reach_text(const CorpusReach& r) {
  const std::string kinds = std::string(r.dense && r.moe ? "dense, MoE" : r.moe ? "MoE" : "dense") +
                            (r.mixers.empty() ? "" : fmt::format(" ({} layers too)", fmt::join(r.mixers, ", ")));
  return fmt::format("{}; {}; CP <= {}; <= {} GPUs", kinds, fmt::join(r.gemm_dtypes, ", "),
                     r.max_cp, r.max_gpus);
}

// Held-out step errors and coverage per GPU generation x precision recipe.
std::string generation_precision_table(const CrossValidation& cv, const CrossValidation& closed) {
  Table gp({{"GPU x precision", Table::Align::left},
            {"cases"},
            {"groups"},
            {"held-out mean"},
            {"median"},
            {"max"},
            {"closed form"},
            {"coverage"}});
  for (const auto& [name, cases] : step_cases_by(cv, generation_precision_key)) {
    const ErrorStats s = stats_of(cases);
    const int covered = covered_in(cases);
    gp.add_row({name, std::to_string(s.cases), std::to_string(groups_in(cases)), pct(s.mean),
                pct(s.median), pct(s.max),
                pct(stats_for(closed, name, generation_precision_key).mean),
                fmt::format("{} of {}", covered, s.cases)});
  }
  return "## step-time |error| per GPU generation x precision recipe (held out)\n" +
         gp.render("");
}

// Every slice the step-time goals are stated over, with the signed error beside the absolute:
// a median signed error above 0 is a prediction that is too fast.
std::vector<std::pair<std::string, std::vector<const CvCase*>>> slices(const CrossValidation& cv) {
  std::vector<std::pair<std::string, std::vector<const CvCase*>>> out;
  std::vector<const CvCase*> all;
  for (const CvCase& c : cv.cases)
    if (c.step) all.push_back(&c);
  out.push_back({"all", all});
  for (CaseKey key : {framework_key, generation_key, precision_key, kind_key, gpus_key}) {
    auto rows = step_cases_by(cv, key);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

std::string slice_table(const CrossValidation& cv) {
  Table t({{"slice", Table::Align::left},
           {"cases"},
           {"groups"},
           {"held-out mean"},
           {"median"},
           {"max"},
           {"median signed"},
           {"too fast"},
           {"coverage"}});
  for (const auto& [name, cases] : slices(cv)) {
    const ErrorStats s = stats_of(cases);
    const int covered = covered_in(cases);
    t.add_row({name, std::to_string(s.cases), std::to_string(groups_in(cases)), pct(s.mean),
               pct(s.median), pct(s.max), fmt::format("{:+.1f}%", s.median_signed * 100),
               fmt::format("{} of {}", s.too_fast, s.cases),
               pct(s.cases ? static_cast<double>(covered) / s.cases : 0)});
  }
  const PairOrder order = pair_order(cv);
  return "## step-time error per slice (held out; signed: measured step / predicted step - 1, "
         "above 0 the prediction is too fast)\n" +
         t.render("") +
         fmt::format("\nplans of one model on one cluster (same source table, figure, GPU and GPU "
                     "count; measured more than 2% apart): the held-out prediction orders {} of "
                     "{} pairs as measured ({})\n",
                     order.concordant, order.pairs, pct(order.share()));
}

nlohmann::json slices_json(const CrossValidation& cv) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, cases] : slices(cv))
    out.push_back({{"slice", name}, {"groups", groups_in(cases)},
                   {"covered", covered_in(cases)}, {"errors", stats_json(stats_of(cases))}});
  return out;
}

// The held-out predictions' peak memory against the published peaks.
std::string peak_table(const CrossValidation& cv) {
  Table pk({{"peak memory", Table::Align::left},
            {"cases"},
            {"mean |error|"},
            {"max |error|"},
            {"mean error"},
            {"under-predicted"}});
  for (const PeakStats& r : peak_stats(cv)) {
    pk.add_row({r.what, std::to_string(r.errors.size()), pct(r.mean_abs()), pct(r.max_abs()),
                fmt::format("{:+.1f}%", r.mean() * 100), std::to_string(r.under())});
  }
  return "## peak device memory against the published peak, the held-out prediction's plan "
         "(allocated or reserved, as each source counts it)\n" +
         pk.render("");
}

}  // namespace

std::string render_cross_validation(const CrossValidation& cv, const CrossValidation& closed) {
  std::string out = fmt::format(
      "# cross-validation: each source group predicted by constants fitted without it\n"
      "corpus: {} runs in {} source groups, {} with a step-time figure; the step is the simulated "
      "one (closed form: the closed forms alone, fitted and cross-validated the same way)\n\n",
      cv.cases.size(), cv.groups.size(), cv.step_cases);
  Table k({{"fitted constant", Table::Align::left},
           {"fit / shipped"},
           {"cases"},
           {"prior"},
           {"profile figure", Table::Align::left}});
  for (const KnobFit& f : cv.fit)
    k.add_row({f.name, fmt::format("{:.3f}", f.multiplier), std::to_string(f.cases),
               f.prior_sigma > 0 ? fmt::format("{:.3f} +- {:.0f}%", f.prior, f.prior_sigma * 100)
                                 : "none",
               f.figure});
  out += fmt::format(
             "## fitted constants ({} free parameters, fitted together on every step-time run; "
             "fit / shipped against the profiles)\n",
             cv.free_parameters) +
         k.render("") + "\n";
  Table g({{"source group", Table::Align::left},
           {"cases"},
           {"in-sample mean"},
           {"held-out mean"},
           {"median"},
           {"max"},
           {"closed form"}});
  for (const auto& [name, cases] : step_cases_by(cv, group_key)) {
    const ErrorStats s = stats_of(cases);
    g.add_row({name, std::to_string(s.cases), pct(s.in_sample_mean), pct(s.mean), pct(s.median),
               pct(s.max), pct(stats_for(closed, name, group_key).mean)});
  }
  out += "## step-time |error| per source group (held out: refit without the group)\n" +
         g.render("") + "\n";
  Table c({{"framework x GPU", Table::Align::left},
           {"cases"},
           {"groups"},
           {"held-out mean"},
           {"median"},
           {"max"},
           {"closed form"},
           {"covered"},
           {"80% interval", Table::Align::left}});
  for (const auto& [name, cases] : step_cases_by(cv, class_key)) {
    const ErrorStats s = stats_of(cases);
    const ClassInterval* ci = interval_of(cv, name);
    c.add_row({name, std::to_string(s.cases), std::to_string(groups_in(cases)), pct(s.mean),
               pct(s.median), pct(s.max), pct(stats_for(closed, name, class_key).mean),
               std::to_string(covered_in(cases)),
               fmt::format("{:+.1f}% to {:+.1f}%{}", ci->low * 100, ci->high * 100,
                           ci == &cv.pooled ? " (pooled: one group)" : "")});
  }
  const ErrorStats all = stats_of(all_steps(cv));
  c.add_rule();
  c.add_row({"all", std::to_string(all.cases), std::to_string(cv.groups.size()), pct(all.mean),
             pct(all.median), pct(all.max), pct(stats_of(all_steps(closed)).mean),
             std::to_string(covered_count(cv)),
             fmt::format("{:+.1f}% to {:+.1f}% (beyond the corpus)", cv.extrapolation.low * 100,
                         cv.extrapolation.high * 100)});
  out += "## step-time |error| per framework x GPU generation (interval: measured step against "
         "predicted)\n" +
         c.render("") + "\n";
  out += fmt::format(
      "coverage of the 80% interval: {} of {} step-time cases ({}) fall inside the interval built "
      "from the other groups' residuals ({}; closed form: {} of {}, {})\n\n",
      covered_count(cv), cv.step_cases, pct(cv.coverage), coverage_by_kind(cv),
      covered_count(closed), closed.step_cases, pct(closed.coverage));
  out += slice_table(cv) + "\n" + generation_precision_table(cv, closed) + "\n" + peak_table(cv);
  return out;
}

nlohmann::json to_json(const CrossValidation& cv, const CrossValidation& closed) {
  nlohmann::json fit = nlohmann::json::array();
  for (const KnobFit& f : cv.fit)
    fit.push_back({{"name", f.name},
                   {"multiplier", f.multiplier},
                   {"cases", f.cases},
                   {"prior", f.prior},
                   {"prior_sigma", f.prior_sigma},
                   {"figure", f.figure}});
  const PairOrder order = pair_order(cv);
  nlohmann::json groups = nlohmann::json::array(), classes = nlohmann::json::array();
  for (const auto& [name, cases] : step_cases_by(cv, group_key))
    groups.push_back({{"group", name},
                      {"errors", stats_json(stats_of(cases))},
                      {"closed_form_errors", stats_json(stats_for(closed, name, group_key))}});
  for (const auto& [name, cases] : step_cases_by(cv, class_key)) {
    nlohmann::json row = {{"class", name},
                          {"errors", stats_json(stats_of(cases))},
                          {"closed_form_errors", stats_json(stats_for(closed, name, class_key))}};
    const ClassInterval* ci = interval_of(cv, name);
    row["groups"] = groups_in(cases);
    row["covered"] = covered_in(cases);
    row["interval"] = {{"low", ci->low}, {"high", ci->high}, {"basis", ci->basis}};
    row["reach"] = write_fields(reach_fields(), ci->reach);
    classes.push_back(row);
  }
  nlohmann::json generations = nlohmann::json::array();
  for (const auto& [name, cases] : step_cases_by(cv, generation_precision_key))
    generations.push_back(
        {{"gpu_precision", name},
         {"errors", stats_json(stats_of(cases))},
         {"closed_form_errors", stats_json(stats_for(closed, name, generation_precision_key))},
         {"covered", covered_in(cases)}});
  nlohmann::json peaks = nlohmann::json::object();
  for (const PeakStats& r : peak_stats(cv))
    peaks[r.what] = {{"cases", r.errors.size()},
                     {"mean_abs_error", r.mean_abs()},
                     {"max_abs_error", r.max_abs()},
                     {"mean_error", r.mean()},
                     {"under_predicted", r.under()}};
  nlohmann::json cases = nlohmann::json::array();
  for (size_t i = 0; i < cv.cases.size(); ++i) {
    const CvCase& c = cv.cases[i];
    // The two cross-validations predict the same runs in the same order.
    const CvCase* k = i < closed.cases.size() && closed.cases[i].run == c.run ? &closed.cases[i]
                                                                              : nullptr;
    cases.push_back({{"id", c.run->id},
                     {"group", c.group},
                     {"class", c.cls},
                     {"in_sample_error", c.in_sample_error},
                     {"cross_validated_error", c.cv_error},
                     {"closed_form_cross_validated_error",
                      k ? nlohmann::json(k->cv_error) : nlohmann::json()},
                     {"step_residual", c.step ? nlohmann::json(c.residual) : nlohmann::json()},
                     {"extrapolated", c.extrapolated},
                     {"covered", c.covered},
                     {"peak_memory_error",
                      c.peak ? nlohmann::json(c.peak_error) : nlohmann::json()}});
  }
  return {{"runs", cv.cases.size()},
          {"groups", cv.groups.size()},
          {"step_cases", cv.step_cases},
          {"fitted_constants", fit},
          {"free_parameters", cv.free_parameters},
          {"slices", slices_json(cv)},
          {"pair_order", {{"pairs", order.pairs}, {"concordant", order.concordant}}},
          {"per_group", groups},
          {"per_class", classes},
          {"per_gpu_precision", generations},
          {"peak_memory", peaks},
          {"extrapolation_interval",
           {{"low", cv.extrapolation.low},
            {"high", cv.extrapolation.high},
            {"cases", cv.extrapolation.cases},
            {"groups", cv.extrapolation.groups},
            {"basis", cv.extrapolation.basis}}},
          {"interval_level", kIntervalLevel},
          {"coverage", cv.coverage},
          {"errors", stats_json(stats_of(all_steps(cv)))},
          {"closed_form",
           {{"coverage", closed.coverage}, {"errors", stats_json(stats_of(all_steps(closed)))}}},
          {"cases", cases}};
}

namespace {

// The constants only `group`'s runs fitted: fitted on some runs with every group, on none without
// it (they fall to their prior, or the profile's figure where they have none).
std::vector<std::string> constants_only(const CrossValidation& cv, const std::string& group) {
  std::vector<std::string> out;
  const auto fold = cv.folds.find(group);
  if (fold == cv.folds.end()) return out;
  for (const KnobFit& full : cv.fit) {
    if (full.cases == 0) continue;
    for (const KnobFit& without : fold->second) {
      if (without.name == full.name && without.cases == 0) out.push_back(full.name);
    }
  }
  return out;
}

// The groups that alone fit a constant and whose held-out runs priced through it miss by more
// than the corpus's held-out mean, worst first: what the interval beyond the corpus is made of.
std::string sole_source_sentence(const CrossValidation& cv) {
  struct Row {
    std::string group, constants;
    ErrorStats stats;
    double low = 0, high = 0;  // measured / predicted step of those runs
  };
  const double overall = stats_of(all_steps(cv)).mean;
  std::vector<Row> rows;
  for (const auto& [group, cases] : step_cases_by(cv, group_key)) {
    const std::vector<std::string> names = constants_only(cv, group);
    if (names.empty()) continue;
    std::vector<const CvCase*> priced;
    for (const CvCase* c : cases) {
      if (c->extrapolated) priced.push_back(c);
    }
    if (priced.empty()) continue;
    Row r{group, fmt::format("{}", fmt::join(names, ", ")), stats_of(priced), 0, 0};
    if (r.stats.mean <= overall) continue;
    r.low = r.high = 1 + priced.front()->residual;
    for (const CvCase* c : priced) {
      r.low = std::min(r.low, 1 + c->residual);
      r.high = std::max(r.high, 1 + c->residual);
    }
    rows.push_back(r);
  }
  if (rows.empty()) return "";
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.stats.mean > b.stats.mean; });
  std::vector<std::string> parts;
  for (const Row& r : rows) {
    const std::string span = std::fabs(r.high - r.low) < 0.05
                                 ? fmt::format("{:.1f}x", r.low)
                                 : fmt::format("{:.1f}-{:.1f}x", r.low, r.high);
    parts.push_back(fmt::format("{} alone fits {}: held out, its {} run{} predicted past the other "
                                "groups' reach miss by {} on average (measured step {} the "
                                "predicted)",
                                r.group, r.constants, r.stats.cases, r.stats.cases == 1 ? "" : "s",
                                pct(r.stats.mean), span));
  }
  return fmt::format(
      "\nThe held-out errors are largest where one source group alone fits a constant, which "
      "falls to its prior (or the profile's figure) when that group is held out: {}. Those runs "
      "are what the interval beyond the corpus is made of.\n",
      fmt::join(parts, "; "));
}

}  // namespace

std::string accuracy_paragraph(const CrossValidation& cv, const CrossValidation& closed) {
  const ErrorStats all = stats_of(all_steps(cv));
  const ErrorStats before = stats_of(all_steps(closed));
  std::string out = fmt::format(
      "Over {} published runs in {} source groups ({} with a step-time figure), the simulated "
      "step (the one every command reports) is off by {} on average in sample and by **{} "
      "(median {}, max {})** when each group is predicted by constants fitted without it "
      "(`shardplan validate --cross-validate`; the closed forms alone, fitted the same way: {}, "
      "median {}, max {}). The 80% intervals every planning command prints around the simulated "
      "step hold {} of those {} held-out cases ({}; {}).\n\n",
      cv.cases.size(), cv.groups.size(), cv.step_cases, pct(all.in_sample_mean), pct(all.mean),
      pct(all.median), pct(all.max), pct(before.mean), pct(before.median), pct(before.max),
      covered_count(cv), cv.step_cases, pct(cv.coverage), coverage_by_kind(cv));
  out += "| framework x GPU | cases | groups | held-out mean | max | covered | 80% interval | "
         "its runs span |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  for (const auto& [name, cases] : step_cases_by(cv, class_key)) {
    const ErrorStats s = stats_of(cases);
    const ClassInterval* ci = interval_of(cv, name);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {:+.1f}% to {:+.1f}% | {} |\n", name,
                       s.cases, groups_in(cases), pct(s.mean), pct(s.max), covered_in(cases),
                       ci->low * 100, ci->high * 100, reach_text(ci->reach));
  }
  out += fmt::format(
      "\nMixtures of experts are classes of their own (\"MoE\"), and a plan reads the class of "
      "its kind. A plan on a framework x GPU generation no group covers, or beyond what its "
      "class's runs span (a mixture of experts where they are dense, a GEMM type none ran, a "
      "context-parallel degree or GPU count past theirs), gets the interval beyond the corpus, "
      "{:+.1f}% to {:+.1f}% (or its class's, where that is wider), and says what lay outside: "
      "the held-out "
      "residuals of runs predicted beyond what their fold was fitted on, cross-validation "
      "judging each held-out run against the reach of the other groups the same way. The "
      "intervals are symmetric in log(measured / predicted step), split-conformal over source "
      "groups.\n",
      cv.extrapolation.low * 100, cv.extrapolation.high * 100);
  out += sole_source_sentence(cv);
  return out;
}

namespace {

// Pipeline-heavy as the issue names it: 8 stages or more, or an interleaved schedule.
bool pipeline_heavy(const PublishedRun& r) {
  return r.plan.pp >= 8 || r.plan.interleave > 1 || r.interleaved;
}

struct Subset {
  const char* name;
  bool (*in)(const PublishedRun&);
};

// One row of the subsets table: held-out mean, median, max and coverage, closed form then
// simulated, over the step cases `in` selects.
std::string subset_row(const CrossValidation& cv, const CrossValidation& closed, const Subset& s) {
  std::vector<const CvCase*> sim, cf;
  int covered = 0, covered_cf = 0;
  for (size_t i = 0; i < cv.cases.size() && i < closed.cases.size(); ++i) {
    const CvCase& c = cv.cases[i];
    if (!c.step || !s.in(*c.run)) continue;
    sim.push_back(&c);
    cf.push_back(&closed.cases[i]);
    covered += c.covered ? 1 : 0;
    covered_cf += closed.cases[i].covered ? 1 : 0;
  }
  const ErrorStats a = stats_of(cf), b = stats_of(sim);
  const double n = std::max<double>(1, static_cast<double>(sim.size()));
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", s.name, sim.size(),
                     pct(a.mean), pct(b.mean), pct(a.median), pct(b.median), pct(a.max),
                     pct(b.max), pct(covered_cf / n), pct(covered / n));
}

}  // namespace

std::string group_table_markdown(const CrossValidation& cv, const CrossValidation& closed) {
  std::string out =
      "| cases | step cases | held-out mean, closed form | simulated | median, closed form | "
      "simulated | max, closed form | simulated | 80% coverage, closed form | simulated |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  const Subset subsets[] = {
      {"all", [](const PublishedRun&) { return true; }},
      {"pipeline-heavy (PP >= 8 or interleaved)", pipeline_heavy},
      {"MoE", [](const PublishedRun& r) { return r.model.is_moe(); }},
      {"neither", [](const PublishedRun& r) { return !pipeline_heavy(r) && !r.model.is_moe(); }}};
  for (const Subset& s : subsets) out += subset_row(cv, closed, s);
  out +=
      "\n| source group | step cases | pipeline-heavy | MoE | held-out mean, closed form | "
      "simulated | change | max, closed form | simulated |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [name, cases] : step_cases_by(cv, group_key)) {
    const ErrorStats b = stats_of(cases), a = stats_for(closed, name, group_key);
    int pipeline = 0, moe = 0;
    for (const CvCase* c : cases) {
      pipeline += pipeline_heavy(*c->run) ? 1 : 0;
      moe += c->run->model.is_moe() ? 1 : 0;
    }
    const auto count = [](int n) { return n ? std::to_string(n) : std::string(); };
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {:+.1f} pt | {} | {} |\n", name, b.cases,
                       count(pipeline), count(moe), pct(a.mean), pct(b.mean),
                       (b.mean - a.mean) * 100, pct(a.max), pct(b.max));
  }
  return out;
}

}  // namespace shardplan

namespace shardplan {
namespace {

std::string stack_generation_key(const CvCase& c) {
  const std::string& fw = c.run->training.framework.name;
  return (fw.empty() ? std::string("none") : fw) + " " + c.run->cluster.gpu.generation;
}

// The step cases of one few-shot result keyed by framework x GPU generation (first-seen order),
// then "all".
std::vector<std::pair<std::string, std::vector<const CvCase*>>> by_stack(const FewShot& f) {
  std::vector<std::pair<std::string, std::vector<const CvCase*>>> out;
  for (const CvCase& c : f.cases) {
    const std::string key = stack_generation_key(c);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == key; });
    if (it == out.end()) {
      out.push_back({key, {}});
      it = out.end() - 1;
    }
    it->second.push_back(&c);
  }
  std::sort(out.begin(), out.end());
  std::vector<const CvCase*> all;
  for (const CvCase& c : f.cases) all.push_back(&c);
  out.push_back({"all", all});
  return out;
}

}  // namespace

std::string render_few_shot(const std::vector<FewShot>& shots) {
  if (shots.empty()) return "";
  std::vector<Table::Column> cols = {{"framework x GPU generation", Table::Align::left}, {"cases"}};
  for (const FewShot& f : shots) {
    const std::string k = fmt::format("K={}", f.k);
    cols.push_back({k + " mean"});
    cols.push_back({k + " signed"});
    cols.push_back({k + " covered"});
  }
  Table t(cols);
  std::vector<std::vector<std::pair<std::string, std::vector<const CvCase*>>>> per_shot;
  per_shot.reserve(shots.size());
  for (const FewShot& f : shots) per_shot.push_back(by_stack(f));
  for (const auto& [key, cases] : per_shot.front()) {
    if (key == "all") t.add_rule();
    std::vector<std::string> row = {key, std::to_string(cases.size())};
    for (const auto& rows : per_shot) {
      std::vector<const CvCase*> mine;
      for (const auto& [k2, c2] : rows)
        if (k2 == key) mine = c2;
      const ErrorStats s = stats_of(mine);
      const int covered = covered_in(mine);
      row.push_back(pct(s.mean));
      row.push_back(fmt::format("{:+.1f}%", s.median_signed * 100));
      row.push_back(pct(mine.empty() ? 0 : static_cast<double>(covered) / mine.size()));
    }
    t.add_row(row);
  }
  const FewShot& first = shots.front();
  std::string out = fmt::format(
      "## few-shot: each source group predicted without it, then calibrated on the first K "
      "step-time runs of each (source, framework, GPU class, model, precision) bucket in file "
      "order (`shardplan calibrate` on a short run of the model); every K judged on the same {} "
      "cases (each bucket's runs after its first {}, in {} buckets); mean |error|, median signed "
      "(measured "
      "/ predicted step - 1), coverage of the 80% interval from the other groups' calibrated "
      "residuals\n",
      first.cases.size(), shots.back().k, first.buckets);
  out += t.render("") + "\n";
  for (const FewShot& f : shots) out += "  " + f.interval.basis + "\n";
  return out;
}

nlohmann::json few_shot_json(const std::vector<FewShot>& shots) {
  nlohmann::json out = nlohmann::json::array();
  for (const FewShot& f : shots) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [key, cases] : by_stack(f))
      rows.push_back({{"stack", key},
                      {"errors", stats_json(stats_of(cases))},
                      {"covered", covered_in(cases)}});
    out.push_back({{"k", f.k},
                   {"cases", f.cases.size()},
                   {"buckets", f.buckets},
                   {"coverage", f.coverage},
                   {"interval", {{"low", f.interval.low}, {"high", f.interval.high},
                                 {"basis", f.interval.basis}}},
                   {"per_stack", rows}});
  }
  return out;
}

}  // namespace shardplan
