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
        r.id = "holdout: " + r.id;
        runs.push_back(std::move(r));
      }
    }
    std::map<std::string, std::vector<Prediction>> groups;
    std::vector<std::string> order;
    for (const PublishedRun& run : runs) {
      if (!s->only.empty() && run.id.rfind(s->only, 0) != 0) continue;
      const std::string g = group_of(run.id);
      if (!groups.count(g)) order.push_back(g);
      groups[g].push_back(predict(run));
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
                << fmt::format("mean |error| {:.1f}%, max |error| {:.1f}% over {} cases\n\n",
                               sum.mean_abs_error * 100, sum.max_abs_error * 100, sum.cases.size());
    }
    if (s->json) print_json({{"groups", out}});
    return 0;
  };
}

}  // namespace shardplan::cli
