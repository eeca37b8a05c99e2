// Reading a plan back from the JSON that `estimate --json` or `plan --json` wrote, so a plan
// made before provisioning can become a launcher config without retyping its flags.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/specs.hpp"

namespace shardplan {

/// Which plan of a `plan --json` file: the ladder's recommendation, the search's fastest, or
/// the plan ranked `rank` (1 = the first of "ranked", the fastest).
struct PlanPick {
  enum class Kind { recommended, fastest, ranked };
  Kind kind = Kind::recommended;
  int rank = 0;
  static PlanPick recommended() { return {}; }
  static PlanPick fastest() { return {Kind::fastest, 0}; }
  static PlanPick ranked(int rank) { return {Kind::ranked, rank}; }
};
/// --pick as typed: recommended, fastest, or a rank in the file's "ranked" list (1, 2, ...).
PlanPick parse_plan_pick(const std::string& text, const std::string& field);

struct PlanFile {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  double step_s = 0;  // the file's predicted step time (time.step_s); 0 when absent
  std::string where;  // "plan.json: recommended", for messages and provenance
};

/// Reconstructs the specs from the text of a plan file: top-level "model", "cluster",
/// "training", and either "plan" (+ "time"), as `estimate --json` writes, or "recommended" /
/// "fastest" objects and a "ranked" list of them, each holding "plan" and "time", as
/// `plan --json` writes. The objects are
/// read strictly: a missing, mistyped or unknown key is an InputError naming it (e.g.
/// "plan.json: cluster.gpu: name"); the plan must pass check_plan. Other top-level sections
/// (memory, comm, ladder ...) are outputs and are not read.
PlanFile read_plan_file(const std::string& text, const std::string& origin, PlanPick pick);

/// The "plan" and "training" objects as to_json (json_out.hpp) writes them, read by the same
/// field rows strictly (`where` prefixes errors). The plan is not checked against a cluster.
ParallelPlan plan_from_json(const nlohmann::json& plan, const std::string& where);
TrainingSpec training_from_json(const nlohmann::json& training, const std::string& where);

}  // namespace shardplan
