// `shardplan memory`: per-device memory of one plan, every stage, with the assumptions.
#include <iostream>
#include <utility>

#include "assumed.hpp"
#include "commands.hpp"
#include "from_file.hpp"
#include "options.hpp"
#include "planning_flags.hpp"
#include "planning_inputs.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/render_memory.hpp"

namespace shardplan::cli {

Runner setup_memory(CLI::App& sub) {
  auto o = std::make_shared<PlanningOptions>();
  add_model_options(sub, *o);
  add_training_options(sub, *o);
  add_cluster_options(sub, *o);
  add_plan_options(sub, *o);
  add_from_option(sub, *o);
  add_json_option(sub, *o);
  return [o]() {
    refuse_run_flags(*o, "memory");
    Inputs in = resolve_inputs(*o);
    note_assumptions(*o, in, {.plan_given = true, .prices = false});
    const MemoryBreakdown mem = estimate_memory(in.model, in.training, in.plan, in.cluster);
    if (o->json) {
      nlohmann::json j = {{"memory", to_json(mem)}};
      add_inputs_json(j, in);
      print_json(std::move(j));
    } else {
      std::cout << render_memory(mem, in.model, in.training, in.plan, in.cluster);
      for (const std::string& n : in.notes) std::cout << "note: " << n << "\n";
    }
    return mem.fits ? 0 : 1;
  };
}

}  // namespace shardplan::cli
