// What `plan` recommends, for the commands that need one plan when the user names none:
// `runbook` and `emit` given no plan flag plan the run `plan` would advise, not an unsharded one.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "options.hpp"

namespace shardplan::cli {

/// True when any flag that describes a plan was given (every Plan row of planning_flags() but
/// --allow-tp-across-nodes: degrees, ZeRO, micro-batch, recompute, schedule, layout, offload).
bool plan_flags_given(const PlanningOptions& o);

/// Model, cluster and training as `plan` reads them: the cluster's GPUs, and the default global
/// batch (with its note) when --global-batch is not given; --calibration not yet applied (`plan
/// --framework all` applies it only where it fits each framework).
Inputs resolve_uncalibrated_search_inputs(const PlanningOptions& o);
/// The same with --calibration applied (an InputError when it calibrates another stack).
Inputs resolve_search_inputs(const PlanningOptions& o);

/// The plan `shardplan plan` recommends for these inputs: the ladder's stop, or the fastest plan
/// found when no rung passes; a note says which. Empty when no plan fits in memory.
std::optional<Inputs> recommended_inputs(const PlanningOptions& o, int threads = 0);

/// A plan read back from a `plan --json` or `estimate --json` file (--plan FILE, --pick
/// recommended|fastest): its model, cluster, training and plan, as that command priced them;
/// --tokens, when given, sets the run's length. `source` says which file and pick.
struct FilePlan {
  Inputs in;
  std::string source;
  double file_step_s = 0;  // the step the file predicted; 0 when it holds none
};
FilePlan plan_from_file(const std::string& path, const std::string& pick, const PlanningOptions& o);
/// With --plan the plan comes from the file: a model, training, cluster or plan flag beside it
/// would be silently ignored, so it is an error (--tokens only sets the run's length).
void refuse_planning_flags(const CLI::App& sub);

/// recommended_inputs when no plan flag is given, else resolve_inputs; either way a note
/// says which plan it is. "No plan fits" is an empty result, not an InputError.
std::optional<Inputs> inputs_or_recommended(const PlanningOptions& o);

}  // namespace shardplan::cli
