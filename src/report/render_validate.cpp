// Renderers for `shardplan validate`: per source group, per framework profile, and peak memory.
#include "shardplan/render_validate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {
namespace {

std::string count_of(size_t n) {
  return fmt::format("{} {}", n, n == 1 ? "case" : "cases");
}

std::string summary_cell(const std::vector<Prediction>& cases) {
  if (cases.empty()) return "-";
  const ValidationSummary s = summarize(cases);
  return fmt::format("{}, mean {:.1f}%, max {:.1f}%", count_of(cases.size()),
                     s.mean_abs_error * 100, s.max_abs_error * 100);
}

nlohmann::json summary_json(const std::vector<Prediction>& cases) {
  const ValidationSummary s = summarize(cases);
  return {{"cases", cases.size()},
          {"mean_abs_error", cases.empty() ? 0.0 : s.mean_abs_error},
          {"max_abs_error", cases.empty() ? 0.0 : s.max_abs_error}};
}

nlohmann::json group_json(const std::string& g, const ValidationSummary& sum) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : sum.cases) {
    cases.push_back({{"id", c.run->id},
                     {"metric", to_string(c.run->metric)},
                     {"measured", c.run->measured},
                     {"predicted", c.predicted},
                     {"error", c.error},
                     {"closed_form_predicted", c.closed_form},
                     {"closed_form_error", c.closed_form_error},
                     {"plan", to_json(c.plan)},
                     {"fits", c.fits},
                     {"source", c.run->source}});
  }
  return {{"group", g},
          {"cases", cases},
          {"mean_abs_error", sum.mean_abs_error},
          {"max_abs_error", sum.max_abs_error}};
}

std::string group_text(const std::string& g, const ValidationSummary& sum) {
  Table t({{"case", Table::Align::left},
           {"metric", Table::Align::left},
           {"measured"},
           {"predicted"},
           {"error"},
           {"closed form"},
           {"plan as predicted", Table::Align::left}});
  for (const auto& c : sum.cases) {
    t.add_row({c.run->id, to_string(c.run->metric), fmt::format("{:.4g}", c.run->measured),
               fmt::format("{:.4g}", c.predicted), fmt::format("{:+.1f}%", c.error * 100),
               fmt::format("{:.4g} ({:+.1f}%)", c.closed_form, c.closed_form_error * 100),
               describe(c.plan) + (c.fits ? "" : " (does not fit)")});
  }
  return "# " + g + "\n" + t.render("") +
         fmt::format("mean |error| {:.1f}%, max |error| {:.1f}% over {}\n\n",
                     sum.mean_abs_error * 100, sum.max_abs_error * 100, count_of(sum.cases.size()));
}

nlohmann::json frameworks_json(const std::map<std::string, FrameworkErrors>& by_framework) {
  nlohmann::json frameworks = nlohmann::json::object();
  for (const auto& [name, f] : by_framework)
    frameworks[name] = {{"fitted", summary_json(f.fitted)}, {"held_out", summary_json(f.held_out)}};
  return frameworks;
}

std::string frameworks_text(const std::map<std::string, FrameworkErrors>& by_framework) {
  Table t({{"framework", Table::Align::left},
           {"fitted", Table::Align::left},
           {"held out", Table::Align::left}});
  for (const auto& [name, f] : by_framework)
    t.add_row({name, summary_cell(f.fitted), summary_cell(f.held_out)});
  return "# per framework profile (the profile that priced each run)\n" + t.render("");
}

// Published peak device memory beside the predicted peak of the plan as predicted.
double memory_error(const Prediction& p) {
  const double measured = p.run->measured_peak_gib;
  return (p.predicted_peak_gib - measured) / measured;
}

std::vector<const Prediction*> memory_cases(const ValidationReport& r) {
  std::vector<const Prediction*> out;
  for (const std::string& g : r.order)
    for (const Prediction& p : r.groups.at(g))
      if (p.run->measured_peak_gib > 0) out.push_back(&p);
  return out;
}

nlohmann::json memory_json(const std::vector<const Prediction*>& cases) {
  nlohmann::json a = nlohmann::json::array();
  for (const Prediction* p : cases)
    a.push_back({{"id", p->run->id},
                 {"profile", profile_of(*p->run)},
                 {"measured_peak_gib", p->run->measured_peak_gib},
                 {"predicted_peak_gib", p->predicted_peak_gib},
                 {"error", memory_error(*p)}});
  return a;
}

std::string memory_text(const std::vector<const Prediction*>& cases) {
  if (cases.empty()) return "";
  Table t({{"case", Table::Align::left},
           {"framework", Table::Align::left},
           {"measured GiB"},
           {"predicted GiB"},
           {"error"}});
  double sum = 0, worst = 0;
  const Prediction* under = nullptr;  // the peak predicted furthest below what was measured
  for (const Prediction* p : cases) {
    t.add_row({p->run->id, profile_of(*p->run), fmt::format("{:.1f}", p->run->measured_peak_gib),
               fmt::format("{:.1f}", p->predicted_peak_gib),
               fmt::format("{:+.1f}%", memory_error(*p) * 100)});
    sum += std::fabs(memory_error(*p));
    worst = std::max(worst, std::fabs(memory_error(*p)));
    const double short_gib = p->run->measured_peak_gib - p->predicted_peak_gib;
    if (short_gib > 0 &&
        (!under || short_gib > under->run->measured_peak_gib - under->predicted_peak_gib))
      under = p;
  }
  std::string out = "\n# peak device memory, where the source publishes it\n" + t.render("") +
                    fmt::format("mean |error| {:.1f}%, max |error| {:.1f}% over {}\n",
                                sum * 100 / static_cast<double>(cases.size()), worst * 100,
                                count_of(cases.size()));
  // Measured <= predicted + shortfall: a headroom of the largest shortfall would have kept every
  // peak above on its device whenever shardplan said the plan fits.
  if (under) {
    const double short_gib = under->run->measured_peak_gib - under->predicted_peak_gib;
    out += fmt::format("largest shortfall {:.1f} GiB ({}): --headroom {:.0f}GiB would have kept "
                       "every peak above on its device\n",
                       short_gib, under->run->id, std::ceil(short_gib));
  }
  return out;
}

// Items of the published sweeps in groups: per sweep, then per kernel (the source's attention
// and norm implementation), then all; each group in first-seen order.
template <class T>
std::vector<std::pair<std::string, std::vector<const T*>>> sweep_groups(
    const std::vector<T>& items) {
  std::vector<std::pair<std::string, std::vector<const T*>>> out;
  std::map<std::string, size_t> at;
  const auto put = [&](const std::string& key, const T* item) {
    if (!at.count(key)) {
      at[key] = out.size();
      out.push_back({key, {}});
    }
    out[at[key]].second.push_back(item);
  };
  for (const T& i : items) put(i.c->sweep, &i);
  for (const T& i : items) put("kernel: " + i.c->kernel, &i);
  for (const T& i : items) put("all", &i);
  return out;
}

std::string matrix_cell(const VerdictMatrix& m) {
  return fmt::format("{:.1f}% ({} / {} / {} / {})", m.right() * 100, m.fits_ran, m.nofit_oom,
                     m.fits_oom, m.nofit_ran);
}

nlohmann::json matrix_json(const VerdictMatrix& m) {
  return {{"fits_ran", m.fits_ran},
          {"does_not_fit_oom", m.nofit_oom},
          {"fits_oom", m.fits_oom},
          {"does_not_fit_ran", m.nofit_ran},
          {"right", m.right()}};
}

// The headrooms whose trade-off `validate` prints: none, and 5% steps to a quarter of the device.
constexpr double kHeadroomShares[] = {0, 0.05, 0.10, 0.15, 0.20, 0.25};

std::vector<VerdictPrediction> values_of(const std::vector<const VerdictPrediction*>& ps) {
  std::vector<VerdictPrediction> out;
  out.reserve(ps.size());
  for (const VerdictPrediction* p : ps) out.push_back(*p);
  return out;
}

// The fit verdict against what each published layout did, at no headroom and at the least
// headroom share (of each device's memory) that says "does not fit" of every layout that ran
// out of memory.
std::string verdicts_text(const std::vector<VerdictPrediction>& v) {
  if (v.empty()) return "";
  const double share = headroom_share_without_false_fits(v);
  Table t({{"sweep", Table::Align::left},
           {"layouts"},
           {"right at no headroom", Table::Align::left},
           {fmt::format("right at {:.1f}% headroom", share * 100), Table::Align::left}});
  for (const auto& [name, ps] : sweep_groups(v)) {
    const std::vector<VerdictPrediction> values = values_of(ps);
    t.add_row({name, std::to_string(ps.size()), matrix_cell(confusion(values, 0)),
               matrix_cell(confusion(values, share))});
  }
  // What a headroom buys on all layouts: false fits avoided against layouts that ran ruled out.
  Table trade({{"headroom"}, {"false fits"}, {"false does-not-fit"}, {"right"}});
  for (const double h : kHeadroomShares) {
    const VerdictMatrix m = confusion(v, h);
    trade.add_row({fmt::format("{:.0f}%", h * 100),
                   fmt::format("{} of {}", m.fits_oom, m.fits_oom + m.nofit_oom),
                   fmt::format("{} of {}", m.nofit_ran, m.fits_ran + m.nofit_ran),
                   fmt::format("{:.1f}%", m.right() * 100)});
  }
  return "# fits or out of memory: published layouts that ran or ran out of memory\n" +
         t.render("") +
         fmt::format(
             "cells: share right (fits and ran / does not fit and out of memory / false fits / "
             "false does-not-fit).\nA headroom of {:.1f}% of the device's memory is the least "
             "that calls every layout that ran out of memory \"does not fit\"\n\n",
             share * 100) +
         trade.render("");
}

nlohmann::json verdicts_json(const std::vector<VerdictPrediction>& v) {
  const double share = headroom_share_without_false_fits(v);
  nlohmann::json trade = nlohmann::json::array();
  for (const double h : kHeadroomShares)
    trade.push_back({{"headroom_share", h}, {"all", matrix_json(confusion(v, h))}});
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [name, ps] : sweep_groups(v)) {
    const std::vector<VerdictPrediction> values = values_of(ps);
    groups.push_back({{"group", name},
                      {"no_headroom", matrix_json(confusion(values, 0))},
                      {"at_headroom_share", matrix_json(confusion(values, share))}});
  }
  nlohmann::json cases = nlohmann::json::array();
  for (const VerdictPrediction& p : v)
    cases.push_back({{"id", p.c->run.id},
                     {"kernel", p.c->kernel},
                     {"outcome", p.c->ran ? "ran" : "out_of_memory"},
                     {"predicted_reserved_gib", p.reserved_bytes / kGiB},
                     {"predicted_allocated_gib", p.allocated_bytes / kGiB},
                     {"capacity_gib", p.capacity_bytes / kGiB}});
  return {{"headroom_share_without_false_fits", share},
          {"groups", groups},
          {"by_headroom", trade},
          {"cases", cases}};
}

// The sweeps' layouts that ran: measured / predicted step - 1 (above 0 the prediction is too
// fast), and how many pairs of one sweep measured more than 2% apart it orders as measured.
struct StepStats {
  std::vector<double> signed_errors;
  int pairs = 0;
  int concordant = 0;
};

StepStats step_stats(const std::vector<const SweepStep*>& steps) {
  StepStats s;
  s.signed_errors.reserve(steps.size());
  for (const SweepStep* x : steps)
    s.signed_errors.push_back(x->c->run.measured / x->p.predicted - 1);
  for (size_t i = 0; i < steps.size(); ++i)
    for (size_t j = i + 1; j < steps.size(); ++j) {
      const SweepStep& a = *steps[i];
      const SweepStep& b = *steps[j];
      if (a.c->sweep != b.c->sweep) continue;  // plans of one model on one cluster
      const double ma = a.c->run.measured, mb = b.c->run.measured;
      if (std::fabs(ma / mb - 1) <= 0.02) continue;
      ++s.pairs;
      if ((ma < mb) == (a.p.predicted < b.p.predicted)) ++s.concordant;
    }
  return s;
}

double mean_abs_of(const std::vector<double>& v) {
  double sum = 0;
  for (double e : v) sum += std::fabs(e);
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

std::string sweep_steps_text(const std::vector<SweepStep>& steps) {
  if (steps.empty()) return "";
  Table t({{"sweep", Table::Align::left},
           {"layouts"},
           {"median signed"},
           {"mean |error|"},
           {"pairs ordered as measured", Table::Align::left}});
  for (const auto& [name, ps] : sweep_groups(steps)) {
    const StepStats s = step_stats(ps);
    t.add_row({name, std::to_string(ps.size()),
               fmt::format("{:+.1f}%", median(s.signed_errors) * 100),
               fmt::format("{:.1f}%", mean_abs_of(s.signed_errors) * 100),
               fmt::format("{} of {} ({:.1f}%)", s.concordant, s.pairs,
                           s.pairs ? 100.0 * s.concordant / s.pairs : 0.0)});
  }
  return "\n# step time of the sweeps' layouts that ran, each plan as stated (never fitted on; "
         "signed: measured / predicted - 1, above 0 the prediction is too fast; pairs: two "
         "layouts of one sweep measured more than 2% apart)\n" +
         t.render("");
}

nlohmann::json sweep_steps_json(const std::vector<SweepStep>& steps) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& [name, ps] : sweep_groups(steps)) {
    const StepStats s = step_stats(ps);
    groups.push_back({{"group", name},
                      {"layouts", ps.size()},
                      {"median_signed_error", median(s.signed_errors)},
                      {"mean_abs_error", mean_abs_of(s.signed_errors)},
                      {"pairs", s.pairs},
                      {"pairs_ordered_as_measured", s.concordant}});
  }
  nlohmann::json cases = nlohmann::json::array();
  for (const SweepStep& x : steps)
    cases.push_back({{"id", x.c->run.id},
                     {"kernel", x.c->kernel},
                     {"measured_s", x.c->run.measured},
                     {"predicted_s", x.p.predicted}});
  return {{"groups", groups}, {"cases", cases}};
}

}  // namespace

std::string profile_of(const PublishedRun& run) {
  return run.training.framework.name.empty() ? "none (ideal stack)" : run.training.framework.name;
}

std::string render_validation(const ValidationReport& r) {
  std::string out;
  if (!r.order.empty()) {  // --only may pick sweep layouts alone
    out =
        "predicted: from the plan's simulated step, as estimate reports it; closed form: the "
        "same figure from the closed forms' step (the search's bound)\n\n";
    for (const std::string& g : r.order) out += group_text(g, summarize(r.groups.at(g)));
    out += frameworks_text(r.by_framework) + memory_text(memory_cases(r));
  }
  if (!out.empty() && !r.verdicts.empty()) out += "\n";
  return out + verdicts_text(r.verdicts) + sweep_steps_text(r.sweep_steps) +
         flagged_text(r.flagged);
}

std::string flagged_text(const std::vector<Prediction>& flagged) {
  if (flagged.empty()) return "";
  Table t({{"case", Table::Align::left},
           {"metric", Table::Align::left},
           {"measured"},
           {"predicted"},
           {"error"}});
  // Each flag once, after the runs it names (a footnote shared by several rows prints once).
  std::vector<std::pair<std::string, std::vector<std::string>>> flags;
  for (const Prediction& c : flagged) {
    t.add_row({c.run->id, to_string(c.run->metric), fmt::format("{:.4g}", c.run->measured),
               fmt::format("{:.4g}", c.predicted), fmt::format("{:+.1f}%", c.error * 100)});
    for (const std::string& f : c.run->source_flags) {
      auto it =
          std::find_if(flags.begin(), flags.end(), [&](const auto& g) { return g.first == f; });
      (it == flags.end() ? flags.emplace_back(f, std::vector<std::string>{}) : *it)
          .second.push_back(c.run->id);
    }
  }
  std::string notes;
  for (const auto& [flag, ids] : flags)
    notes += fmt::format("  {}:\n    {}\n", fmt::join(ids, ", "), flag);
  return fmt::format(
             "\n# flagged by their source ({}): predicted by the shipped constants, "
             "never fitted on, in none of the figures above\n",
             count_of(flagged.size())) +
         t.render("") + notes;
}

nlohmann::json flagged_json(const std::vector<Prediction>& flagged) {
  nlohmann::json out = nlohmann::json::array();
  for (const Prediction& c : flagged) {
    out.push_back({{"id", c.run->id},
                   {"metric", to_string(c.run->metric)},
                   {"measured", c.run->measured},
                   {"predicted", c.predicted},
                   {"error", c.error},
                   {"source_flags", c.run->source_flags},
                   {"source", c.run->source}});
  }
  return out;
}

nlohmann::json to_json(const ValidationReport& r) {
  nlohmann::json groups = nlohmann::json::array();
  for (const std::string& g : r.order) groups.push_back(group_json(g, summarize(r.groups.at(g))));
  return {{"groups", groups},
          {"frameworks", frameworks_json(r.by_framework)},
          {"memory", memory_json(memory_cases(r))},
          {"fit_verdicts", verdicts_json(r.verdicts)},
          {"sweep_steps", sweep_steps_json(r.sweep_steps)},
          {"flagged", flagged_json(r.flagged)}};
}

}  // namespace shardplan
