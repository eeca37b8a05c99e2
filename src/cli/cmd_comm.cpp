// `shardplan comm`: the communication of one plan, per parallelism, with the step it sits in.
#include <fmt/format.h>

#include <iostream>
#include <utility>

#include "assumed.hpp"
#include "commands.hpp"
#include "options.hpp"
#include "planning_inputs.hpp"
#include "shardplan/render_comm.hpp"
#include "shardplan/render_estimate.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/table.hpp"

namespace shardplan::cli {

Runner setup_comm(CLI::App& sub) {
  auto o = add_planning_options(sub);
  return [o]() {
    refuse_run_flags(*o, "comm");
    Inputs in = resolve_inputs(*o);
    note_assumptions(*o, in, {.plan_given = true, .prices = false});
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    if (o->json) {
      nlohmann::json j = {{"time", to_json(e.time)},
                          {"comm", to_json(e.comm, e.time, in.plan, in.training, in.cluster)}};
      add_inputs_json(j, in);
      print_json(std::move(j));
      return 0;
    }
    std::cout
        << describe_inputs(in) << render_comm(e.comm, e.time, in.plan, in.training, in.cluster)
        << fmt::format(
               "\nStep {} = compute {} + bubble {} + exposed communication {} + optimizer {}\n",
               format_seconds(e.time.step_s), format_seconds(e.time.compute_s),
               format_seconds(e.time.bubble_s), format_seconds(e.time.exposed_comm_s),
               format_seconds(e.time.optimizer_s));
    return 0;
  };
}

}  // namespace shardplan::cli
