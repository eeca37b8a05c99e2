// `shardplan validate [FILE]`: predicts every published run and prints predicted vs measured.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "options.hpp"
#include "shardplan/error.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/table.hpp"
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

// Per framework profile (the one that priced each run): fitted and held-out cases apart.
struct FrameworkErrors {
  std::vector<Prediction> fitted, held_out;
};

std::string profile_of(const PublishedRun& run) {
  return run.training.framework.name.empty() ? "none (ideal stack)" : run.training.framework.name;
}

std::string summary_cell(const std::vector<Prediction>& cases) {
  if (cases.empty()) return "-";
  const ValidationSummary s = summarize(cases);
  return fmt::format("{} cases, mean {:.1f}%, max {:.1f}%", cases.size(), s.mean_abs_error * 100,
                     s.max_abs_error * 100);
}

nlohmann::json summary_json(const std::vector<Prediction>& cases) {
  const ValidationSummary s = summarize(cases);
  return {{"cases", cases.size()},
          {"mean_abs_error", cases.empty() ? 0.0 : s.mean_abs_error},
          {"max_abs_error", cases.empty() ? 0.0 : s.max_abs_error}};
}

struct ValidateFlags {
  std::string file;
  std::string only;
  PlanningOptions cluster;
  bool json = false;
};

// The file's runs; by default the fitted runs, then the held-out ones marked as such.
std::vector<PublishedRun> load_runs(const ValidateFlags& f) {
  ClusterOptions co;
  co.cluster = f.cluster.cluster;
  if (!f.file.empty()) return load_published_runs(read_text_file(f.file, "file"), f.file, co);
  std::vector<PublishedRun> runs =
      load_published_runs(default_published_runs(), "profiles/validation/published-runs.json", co);
  for (PublishedRun& r :
       load_published_runs(default_holdout_runs(), "profiles/validation/holdout-runs.json", co)) {
    if (r.held_out) r.id = "holdout: " + r.id;
    runs.push_back(std::move(r));
  }
  return runs;
}

// Every run predicted, grouped by source (in file order) and by framework profile.
struct Predictions {
  std::map<std::string, std::vector<Prediction>> groups;
  std::map<std::string, FrameworkErrors> by_framework;
  std::vector<std::string> order;
};

Predictions predict_runs(const std::vector<PublishedRun>& runs, const std::string& only) {
  Predictions out;
  for (const PublishedRun& run : runs) {
    if (!only.empty() && run.id.rfind(only, 0) != 0) continue;
    const std::string g = group_of(run.id);
    if (!out.groups.count(g)) out.order.push_back(g);
    out.groups[g].push_back(predict(run));
    FrameworkErrors& f = out.by_framework[profile_of(run)];
    (run.held_out ? f.held_out : f.fitted).push_back(out.groups[g].back());
  }
  if (out.order.empty()) throw InputError("--only", "no run id starts with '" + only + "'");
  return out;
}

nlohmann::json group_json(const std::string& g, const ValidationSummary& sum) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : sum.cases) {
    cases.push_back({{"id", c.run->id},
                     {"metric", to_string(c.run->metric)},
                     {"measured", c.run->measured},
                     {"predicted", c.predicted},
                     {"error", c.error},
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
           {"plan as predicted", Table::Align::left}});
  for (const auto& c : sum.cases) {
    t.add_row({c.run->id, to_string(c.run->metric), fmt::format("{:.4g}", c.run->measured),
               fmt::format("{:.4g}", c.predicted), fmt::format("{:+.1f}%", c.error * 100),
               describe(c.plan) + (c.fits ? "" : " (does not fit)")});
  }
  return "# " + g + "\n" + t.render("") +
         fmt::format("mean |error| {:.1f}%, max |error| {:.1f}% over {} cases\n\n",
                     sum.mean_abs_error * 100, sum.max_abs_error * 100, sum.cases.size());
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

int run_validate(const ValidateFlags& f) {
  const std::vector<PublishedRun> runs = load_runs(f);  // the predictions point into it
  Predictions p = predict_runs(runs, f.only);
  nlohmann::json groups = nlohmann::json::array();
  for (const std::string& g : p.order) {
    const ValidationSummary sum = summarize(p.groups[g]);
    if (f.json) {
      groups.push_back(group_json(g, sum));
    } else {
      std::cout << group_text(g, sum);
    }
  }
  if (f.json) {
    print_json({{"groups", groups}, {"frameworks", frameworks_json(p.by_framework)}});
  } else {
    std::cout << frameworks_text(p.by_framework);
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
  return [f]() { return run_validate(*f); };
}

}  // namespace shardplan::cli
