// Renderers for `shardplan validate`: per source group, per framework profile, and peak memory.
#include "shardplan/render_validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"

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

}  // namespace

std::string profile_of(const PublishedRun& run) {
  return run.training.framework.name.empty() ? "none (ideal stack)" : run.training.framework.name;
}

std::string render_validation(const ValidationReport& r) {
  std::string out =
      "predicted: from the plan's simulated step, as estimate reports it; closed form: the same "
      "figure from the closed forms' step (the search's bound)\n\n";
  for (const std::string& g : r.order) out += group_text(g, summarize(r.groups.at(g)));
  return out + frameworks_text(r.by_framework) + memory_text(memory_cases(r));
}

nlohmann::json to_json(const ValidationReport& r) {
  nlohmann::json groups = nlohmann::json::array();
  for (const std::string& g : r.order) groups.push_back(group_json(g, summarize(r.groups.at(g))));
  return {{"groups", groups},
          {"frameworks", frameworks_json(r.by_framework)},
          {"memory", memory_json(memory_cases(r))}};
}

}  // namespace shardplan
