// What a planning command takes and what it resolves to: the model, training, cluster and plan
// flags, --from FILE, --calibration and --json on one subcommand, and the inputs they describe,
// from the flags (options.hpp) or from a launcher config (from_file.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "options.hpp"

namespace shardplan::cli {

/// Model, training, cluster, plan, --from, --calibration and --json flags on `app`; the options
/// live as long as the returned pointer (the subcommand's runner keeps it).
std::shared_ptr<PlanningOptions> add_planning_options(CLI::App& app);

/// Model, cluster, training and the one plan the flags describe (with --from, the file's plan:
/// resolve_from_file), --calibration applied; InputError (exit 2) when the plan cannot run,
/// naming the flag to change.
Inputs resolve_inputs(const PlanningOptions& o);

}  // namespace shardplan::cli
