// Accuracy benchmark: predicts every published run shipped with shardplan and prints predicted
// against measured per case, with mean and max absolute error per group.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/validation.hpp"

using namespace shardplan;

int main(int argc, char** argv) {
  const std::string origin = argc > 1 ? argv[1] : "profiles/validation/published-runs.json";
  const std::string text = argc > 1 ? read_text_file(argv[1], "file") : default_published_runs();
  std::map<std::string, std::vector<Prediction>> groups;
  const auto runs = load_published_runs(text, origin);
  for (const PublishedRun& run : runs) {
    const auto cut = run.id.find('-', run.id.find('-') + 1);
    groups[run.id.substr(0, cut)].push_back(predict(run));
  }
  for (auto& [group, cases] : groups) {
    const ValidationSummary s = summarize(cases);
    fmt::print("# {}\n", group);
    for (const auto& c : s.cases) {
      fmt::print("{:<48} {:<18} measured {:>9.4g}  predicted {:>9.4g}  error {:+6.1f}%\n",
                 c.run->id, to_string(c.run->metric), c.run->measured, c.predicted, c.error * 100);
    }
    fmt::print("{}: mean |error| {:.2f}%, max |error| {:.2f}% over {} cases\n\n", group,
               s.mean_abs_error * 100, s.max_abs_error * 100, s.cases.size());
  }
  return 0;
}
