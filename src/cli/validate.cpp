// `shardplan validate [FILE]`: predicts every published run and prints predicted vs measured.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "options.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/render.hpp"
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
  return fmt::format("{} {}, mean {:.1f}%, max {:.1f}%", cases.size(),
                     cases.size() == 1 ? "case" : "cases", s.mean_abs_error * 100,
                     s.max_abs_error * 100);
}

nlohmann::json summary_json(const std::vector<Prediction>& cases) {
  const ValidationSummary s = summarize(cases);
  return {{"cases", cases.size()},
          {"mean_abs_error", cases.empty() ? 0.0 : s.mean_abs_error},
          {"max_abs_error", cases.empty() ? 0.0 : s.max_abs_error}};
}

// Published peak device memory beside the predicted peak of the plan as predicted.
struct MemoryCase {
  const Prediction* prediction;
  double error() const {
    const double measured = prediction->run->measured_peak_gib;
    return (prediction->predicted_peak_gib - measured) / measured;
  }
};

std::vector<MemoryCase> memory_cases(const std::map<std::string, std::vector<Prediction>>& groups,
                                     const std::vector<std::string>& order) {
  std::vector<MemoryCase> out;
  for (const std::string& g : order)
    for (const Prediction& p : groups.at(g))
      if (p.run->measured_peak_gib > 0) out.push_back({&p});
  return out;
}

nlohmann::json memory_json(const std::vector<MemoryCase>& cases) {
  nlohmann::json a = nlohmann::json::array();
  for (const MemoryCase& c : cases)
    a.push_back({{"id", c.prediction->run->id},
                 {"profile", profile_of(*c.prediction->run)},
                 {"measured_peak_gib", c.prediction->run->measured_peak_gib},
                 {"predicted_peak_gib", c.prediction->predicted_peak_gib},
                 {"error", c.error()}});
  return a;
}

std::string render_memory(const std::vector<MemoryCase>& cases) {
  Table t({{"case", Table::Align::left},
           {"framework", Table::Align::left},
           {"measured GiB"},
           {"predicted GiB"},
           {"error"}});
  double sum = 0, worst = 0;
  for (const MemoryCase& c : cases) {
    t.add_row({c.prediction->run->id, profile_of(*c.prediction->run),
               fmt::format("{:.1f}", c.prediction->run->measured_peak_gib),
               fmt::format("{:.1f}", c.prediction->predicted_peak_gib),
               fmt::format("{:+.1f}%", c.error() * 100)});
    sum += std::fabs(c.error());
    worst = std::max(worst, std::fabs(c.error()));
  }
  return "# peak device memory, where the source publishes it\n" + t.render("") +
         fmt::format("mean |error| {:.1f}%, max |error| {:.1f}% over {} {}\n",
                     sum * 100 / cases.size(), worst * 100, cases.size(),
                     cases.size() == 1 ? "case" : "cases");
}

}  // namespace

Runner setup_validate(CLI::App& sub) {
  struct State {
    std::string file;
    std::string only;
    PlanningOptions cluster;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  sub.add_option(
      "file", s->file,
      "Published-runs JSON (default: profiles/validation/published-runs.json, the runs the "
      "efficiencies were fitted on, then holdout-runs.json, runs they were not)");
  sub.add_option("--only", s->only, "Only runs whose id starts with this");
  sub.add_option("--cluster", s->cluster.cluster,
                 "Cluster to run every case on (default: each run's hardware)");
  sub.add_flag("--json", s->json, "Print JSON");
  return [s]() {
    ClusterOptions co;
    co.cluster = s->cluster.cluster;
    std::vector<PublishedRun> runs;
    if (!s->file.empty()) {
      runs = load_published_runs(read_text_file(s->file, "file"), s->file, co);
    } else {
      runs = load_published_runs(default_published_runs(),
                                 "profiles/validation/published-runs.json", co);
      for (PublishedRun& r : load_published_runs(default_holdout_runs(),
                                                 "profiles/validation/holdout-runs.json", co)) {
        if (r.held_out) r.id = "holdout: " + r.id;
        runs.push_back(std::move(r));
      }
    }
    std::map<std::string, std::vector<Prediction>> groups;
    std::map<std::string, FrameworkErrors> by_framework;
    std::vector<std::string> order;
    for (const PublishedRun& run : runs) {
      if (!s->only.empty() && run.id.rfind(s->only, 0) != 0) continue;
      const std::string g = group_of(run.id);
      if (!groups.count(g)) order.push_back(g);
      groups[g].push_back(predict(run));
      FrameworkErrors& f = by_framework[profile_of(run)];
      (run.held_out ? f.held_out : f.fitted).push_back(groups[g].back());
    }
    if (order.empty()) throw InputError("--only", "no run id starts with '" + s->only + "'");
    nlohmann::json out = nlohmann::json::array();
    double worst = 0;
    for (const std::string& g : order) {
      const ValidationSummary sum = summarize(groups[g]);
      worst = std::max(worst, sum.max_abs_error);
      if (s->json) {
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
        out.push_back({{"group", g},
                       {"cases", cases},
                       {"mean_abs_error", sum.mean_abs_error},
                       {"max_abs_error", sum.max_abs_error}});
        continue;
      }
      std::cout << "# " << g << "\n";
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
      std::cout << t.render("")
                << fmt::format("mean |error| {:.1f}%, max |error| {:.1f}% over {} {}\n\n",
                               sum.mean_abs_error * 100, sum.max_abs_error * 100, sum.cases.size(),
                               sum.cases.size() == 1 ? "case" : "cases");
    }
    if (s->json) {
      nlohmann::json frameworks = nlohmann::json::object();
      for (const auto& [name, f] : by_framework)
        frameworks[name] = {{"fitted", summary_json(f.fitted)},
                            {"held_out", summary_json(f.held_out)}};
      print_json({{"groups", out},
                  {"frameworks", frameworks},
                  {"memory", memory_json(memory_cases(groups, order))}});
      return 0;
    }
    std::cout << "# per framework profile (the profile that priced each run)\n";
    Table t({{"framework", Table::Align::left},
             {"fitted", Table::Align::left},
             {"held out", Table::Align::left}});
    for (const auto& [name, f] : by_framework)
      t.add_row({name, summary_cell(f.fitted), summary_cell(f.held_out)});
    std::cout << t.render("");
    const std::vector<MemoryCase> memory = memory_cases(groups, order);
    if (!memory.empty()) std::cout << "\n" << render_memory(memory);
    return 0;
  };
}

}  // namespace shardplan::cli
