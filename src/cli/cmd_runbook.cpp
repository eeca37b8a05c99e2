// `shardplan runbook`: checkpoint size and write time, interruptions at the cluster's scale, the
// Young/Daly interval, goodput, and the long-run procedures for one plan (the one `plan`
// recommends when no plan flag is given).
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <utility>

#include "commands.hpp"
#include "options.hpp"
#include "planning_inputs.hpp"
#include "recommended.hpp"
#include "runbook_options.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/render_runbook.hpp"
#include "shardplan/table.hpp"

namespace shardplan::cli {

Runner setup_runbook(CLI::App& sub) {
  auto o = add_planning_options(sub);
  auto f = std::make_shared<RunbookFlags>();
  add_runbook_options(
      sub, *f, "Checkpoint every DURATION (e.g. 30min), or auto: Young's interval (default)");
  return [o, f]() {
    const std::optional<Inputs> chosen = inputs_or_recommended(*o);
    if (!chosen) {
      std::fprintf(stderr,
                   "shardplan: error: no plan of this model fits on this cluster (`shardplan "
                   "plan` shows the closest); no runbook for a run that cannot start\n");
      return 1;
    }
    Inputs in = *chosen;
    const RunbookInputs options = resolve_runbook_flags(*f, 0);
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    if (!e.memory.fits) {
      const std::string warning = fmt::format(
          "the plan does not fit: {} per device of {} (see `shardplan estimate`); the figures "
          "below are for a run that cannot start",
          format_gib(e.memory.total_bytes()), format_gib(e.memory.capacity_bytes));
      std::fprintf(stderr, "shardplan: warning: %s\n", warning.c_str());
      in.notes.push_back("warning: " + warning);
    }
    const Runbook r = plan_runbook(in.model, in.training, in.plan, in.cluster, e, options.options);
    if (o->json) {
      nlohmann::json j = to_json(r, options, in.training);
      for (const std::string& w : runbook_warnings(r)) in.notes.push_back("warning: " + w);
      add_inputs_json(j, in);
      print_json(std::move(j));
    } else {
      std::cout << describe_inputs(in) << render_runbook(r, options, in.training, in.cluster);
    }
    return e.memory.fits ? 0 : 1;
  };
}

}  // namespace shardplan::cli
