// `shardplan estimate`: memory, communication and time of one plan.
#include <iostream>

#include "commands.hpp"
#include "assumed.hpp"
#include "options.hpp"
#include "shardplan/render_comm.hpp"
#include "shardplan/render_estimate.hpp"
#include "shardplan/render_memory.hpp"
#include "shardplan/reports.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan::cli {
Runner setup_estimate(CLI::App& sub) {
  auto o = add_planning_options(sub);
  auto trace = std::make_shared<std::string>();
  add_trace_option(sub, *trace);
  auto html = std::make_shared<std::string>();
  sub.add_option("--html", *html, "Also write a self-contained HTML report with charts");
  return [o, trace, html]() {
    Inputs in = resolve_timed_inputs(*o);
    note_assumptions(*o, in, {.plan_given = true, .prices = true});
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    write_trace(*trace, in, e);
    if (!html->empty()) {
      write_html(*html, estimate_report(e, in.model, in.training, in.plan, in.cluster, in.notes), "--html");
    }
    if (o->json) {
      nlohmann::json j = to_json(e, in.plan, in.training, in.cluster);
      add_inputs_json(j, in);
      print_json(j);
    } else {
      std::cout << describe_inputs(in) << render_memory_table(e.memory, in.plan) << "\n"
                << render_time(e, in.training, in.cluster) << "\n"
                << render_comm(e.comm, e.time, in.plan, in.training, in.cluster);
    }
    return e.memory.fits ? 0 : 1;
  };
}

}  // namespace shardplan::cli
