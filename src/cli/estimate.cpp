// `shardplan comm` and `shardplan estimate`: communication alone, or memory, communication and
// time of one plan.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "options.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan::cli {
namespace {

std::shared_ptr<PlanningOptions> planning_flags(CLI::App& sub) {
  auto o = std::make_shared<PlanningOptions>();
  add_model_options(sub, *o);
  add_training_options(sub, *o);
  add_cluster_options(sub, *o);
  add_plan_options(sub, *o);
  add_json_option(sub, *o);
  return o;
}

Inputs timed_inputs(const PlanningOptions& o) {
  Inputs in = resolve_inputs(o);
  if (!in.model.has_architecture() && (in.plan.tp > 1 || in.plan.pp > 1 || in.plan.cp > 1)) {
    throw InputError(in.plan.tp > 1 ? "--tp" : in.plan.pp > 1 ? "--pp" : "--cp",
                     "tensor, pipeline and context parallel traffic depend on the layer shapes; give "
                     "--model or --layers/--hidden/--heads instead of --params");
  }
  return in;
}

std::string header(const Inputs& in) {
  const TrainingSpec& tr = in.training;
  return fmt::format("model    {}\ncluster  {}\nplan     {}\ntraining {}, {}, sequence {}, global batch {} "
                     "({} micro-batch{} per step)\n\n",
                     describe_model(in.model), describe_cluster(in.cluster), describe(in.plan),
                     tr.precision == Precision::fp32 ? "fp32" : std::string(to_string(tr.precision)) + " mixed precision",
                     to_string(tr.optimizer), tr.seq_len, tr.global_batch, micro_batches_per_step(tr, in.plan),
                     micro_batches_per_step(tr, in.plan) == 1 ? "" : "es");
}

}  // namespace

Runner setup_comm(CLI::App& sub) {
  auto o = planning_flags(sub);
  return [o]() {
    const Inputs in = timed_inputs(*o);
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    if (o->json) {
      print_json({{"model", to_json(in.model)}, {"cluster", to_json(in.cluster)}, {"plan", to_json(in.plan)},
                  {"training", to_json(in.training)}, {"time", to_json(e.time)},
                  {"comm", to_json(e.comm, e.time, in.plan, in.training, in.cluster)}});
      return 0;
    }
    std::cout << header(in) << render_comm(e.comm, e.time, in.plan, in.training, in.cluster)
              << fmt::format("\nStep {} = compute {} + bubble {} + exposed communication {} + optimizer {}\n",
                             format_seconds(e.time.step_s), format_seconds(e.time.compute_s),
                             format_seconds(e.time.bubble_s), format_seconds(e.time.exposed_comm_s),
                             format_seconds(e.time.optimizer_s));
    return 0;
  };
}

Runner setup_estimate(CLI::App& sub) {
  auto o = planning_flags(sub);
  return [o]() {
    const Inputs in = timed_inputs(*o);
    const Estimate e = estimate(in.model, in.training, in.plan, in.cluster);
    if (o->json) {
      nlohmann::json j = to_json(e, in.plan, in.training, in.cluster);
      j["model"] = to_json(in.model);
      j["cluster"] = to_json(in.cluster);
      j["plan"] = to_json(in.plan);
      j["training"] = to_json(in.training);
      print_json(j);
    } else {
      std::cout << header(in) << render_memory_table(e.memory, in.plan) << "\n"
                << render_time(e, in.training, in.cluster) << "\n"
                << render_comm(e.comm, e.time, in.plan, in.training, in.cluster);
    }
    return e.memory.fits ? 0 : 1;
  };
}

}  // namespace shardplan::cli
