// A planning command's flags and their inputs (planning_inputs.hpp).
#include "planning_inputs.hpp"

#include "from_file.hpp"
#include "planning_flags.hpp"

namespace shardplan::cli {

std::shared_ptr<PlanningOptions> add_planning_options(CLI::App& app) {
  auto o = std::make_shared<PlanningOptions>();
  add_model_options(app, *o);
  add_training_options(app, *o);
  add_cluster_options(app, *o);
  add_plan_options(app, *o);
  add_from_option(app, *o);
  add_calibration_option(app, *o);
  add_json_option(app, *o);
  return o;
}

Inputs resolve_inputs(const PlanningOptions& o) {
  Inputs in = o.from.empty() ? resolve_flag_inputs(o) : resolve_from_file(o);
  apply_calibration(o, in);
  return in;
}

}  // namespace shardplan::cli
