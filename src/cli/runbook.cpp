// `shardplan runbook`: checkpoint size and write time, interruptions at the cluster's scale, the
// Young/Daly interval, goodput, and the long-run procedures (checkpoint on time, keep-last-K,
// resume test, timeouts) for one plan.
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "options.hpp"
#include "runbook_options.hpp"
#include "shardplan/render.hpp"
#include "shardplan/render_runbook.hpp"

namespace shardplan::cli {

Runner setup_runbook(CLI::App& sub) {
  auto o = add_planning_options(sub);
  auto f = std::make_shared<RunbookFlags>();
  add_runbook_options(
      sub, *f, "Checkpoint every DURATION (e.g. 30min), or auto: Young's interval (default)");
  return [o, f]() {
    const Inputs in = resolve_timed_inputs(*o);
    const RunbookInputs options = resolve_runbook_flags(*f, 0);
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    if (!e.memory.fits) {
      std::fprintf(stderr,
                   "shardplan: warning: the plan does not fit: %s per device of %s (see "
                   "`shardplan estimate`)\n",
                   format_gib(e.memory.total_bytes()).c_str(),
                   format_gib(e.memory.capacity_bytes).c_str());
    }
    const Runbook r = plan_runbook(in.model, in.training, in.plan, in.cluster, e, options.options);
    if (o->json) {
      nlohmann::json j = to_json(r, options, in.training);
      add_inputs_json(j, in);
      print_json(j);
    } else {
      std::cout << describe_inputs(in) << render_runbook(r, options, in.training, in.cluster);
    }
    return 0;
  };
}

}  // namespace shardplan::cli
