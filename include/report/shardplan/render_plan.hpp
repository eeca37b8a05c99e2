// `shardplan plan` as text and JSON: the ladder with each rung's reason, the recommended and the
// fastest plan, the top-K table and the search's counts.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/ladder.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/search.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// The top-K table: each plan's step, tokens/s, memory per device and exposed communication.
std::string render_ranked(const std::vector<Candidate>& ranked, const ClusterSpec& cluster);

/// One plan as `estimate --json` prints it (from the engine's estimate of it), with the plan
/// itself under "plan".
nlohmann::json candidate_json(const ParallelPlan& plan, const Estimate& estimate,
                              const TrainingSpec& training, const ClusterSpec& cluster);

/// One planning run as `shardplan plan` reports it.
struct PlanOutcome {
  const ModelSpec& model;
  const TrainingSpec& training;
  const ClusterSpec& cluster;
  const std::vector<std::string>& notes;  // defaults taken for the user, said once
  const PlanningResult& planned;          // its ranking already cut to --top
  Objective objective = Objective::time;
  /// The fastest plan with even stages and plain 1F1B, when the fastest plan uses more, and
  /// its estimate.
  std::optional<Candidate> plain_1f1b;
  std::optional<Estimate> plain_1f1b_estimate;
};

/// The report `shardplan plan` prints.
std::string render_plan(const PlanOutcome& o);
/// The object `shardplan plan --json` prints.
nlohmann::json to_json(const PlanOutcome& o);

/// One framework's row of `plan --framework all`: the ladder and the search with its profile, or
/// why no plan can run these inputs on it.
struct FrameworkPlans {
  std::string framework;
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  std::vector<std::string> refused;  // "field: message" per broken rule; empty when planned
  PlanningResult planned;  // the ladder, the search and the estimates of the plans shown
};

/// The side-by-side table of `plan --framework all`, then the defaults taken for the user
/// (`notes`, the same for every framework) and a warning for each plan whose MFU is above its
/// framework's highest published.
std::string render_framework_plans(const std::vector<FrameworkPlans>& rows,
                                   const std::vector<std::string>& notes);
/// Its JSON: {"frameworks": [...], "notes": [...]}; each plan carries its own notes.
nlohmann::json to_json(const std::vector<FrameworkPlans>& rows,
                       const std::vector<std::string>& notes);

}  // namespace shardplan
