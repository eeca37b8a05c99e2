// `shardplan estimate`: memory, communication and time of one plan.
#include <fmt/format.h>

#include <iostream>
#include <utility>

#include "assumed.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "planning_inputs.hpp"
#include "recommended.hpp"
#include "shardplan/error.hpp"
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
  auto plan_file = std::make_shared<std::string>();
  auto pick = std::make_shared<std::string>();
  sub.add_option("--plan", *plan_file,
                 "Re-price a plan from a `plan --json` or `estimate --json` file instead of "
                 "flags (its model, cluster, training and plan)");
  sub.add_option(
      "--pick", *pick,
      "With a `plan --json` file: recommended (default), fastest, or N (the plan ranked N)");
  CLI::App* app = &sub;
  return [o, trace, html, plan_file, pick, app]() {
    Inputs in;
    if (!plan_file->empty()) {
      refuse_planning_flags(*app);
      FilePlan f = plan_from_file(*plan_file, *pick, *o);
      in = std::move(f.in);
      in.notes.push_back("plan from " + f.source + ", re-priced by this build" +
                         (f.file_step_s > 0
                              ? fmt::format(" (the file predicted a {:.2f} s step)", f.file_step_s)
                              : ""));
    } else {
      if (!pick->empty())
        throw InputError("--pick", "chooses a plan in a --plan FILE; give --plan too");
      in = resolve_inputs(*o);
    }
    note_assumptions(*o, in, {.plan_given = plan_file->empty(), .prices = true});
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    write_trace(*trace, in, e);
    if (!html->empty()) {
      write_html(*html, estimate_report(e, in.model, in.training, in.plan, in.cluster, in.notes),
                 "--html");
    }
    if (o->json) {
      nlohmann::json j = to_json(e, in.plan, in.training, in.cluster);
      add_inputs_json(j, in);
      print_json(std::move(j));
    } else {
      std::cout << describe_inputs(in) << render_memory_table(e.memory, in.plan) << "\n"
                << render_time(e, in.training, in.cluster) << "\n"
                << render_comm(e.comm, e.time, in.plan, in.training, in.cluster);
    }
    return e.memory.fits ? 0 : 1;
  };
}

}  // namespace shardplan::cli
