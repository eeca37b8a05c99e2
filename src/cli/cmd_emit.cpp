// `shardplan emit`: a launcher config for one plan (given by flags or by a plan file), with the
// runbook's long-run settings, to stdout or atomically to -o FILE.
#include "shardplan/emit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <tuple>

#include "commands.hpp"
#include "emit_options.hpp"
#include "options.hpp"
#include "planning_flags.hpp"
#include "recommended.hpp"
#include "runbook_options.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/plan_file.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {
namespace {

struct EmitFlags {
  std::string format, plan_file, pick, output, seed, slurm, k8s, skypilot;
  SchedulerOptions scheduler;
};

void throw_problems(LauncherFormat format, const std::vector<PlanProblem>& problems) {
  std::string message =
      fmt::format("{} cannot run this plan: {}", to_string(format), problems.front().message);
  for (size_t i = 1; i < problems.size(); ++i)
    message += fmt::format("; also {}: {}", problems[i].field, problems[i].message);
  throw InputError(problems.front().field, message);
}

// The plan to emit and where it came from: a plan file (--plan), the flags, or, without plan
// flags, the plan `shardplan plan` recommends. None when no plan fits (said on stderr).
struct ChosenPlan {
  Inputs in;
  std::string source = "flags";
  double file_step_s = 0;  // the step the plan file predicted; 0 without a file
};

std::optional<ChosenPlan> choose_plan(const CLI::App& app, const EmitFlags& e, PlanningOptions& o) {
  ChosenPlan c;
  if (!e.plan_file.empty()) {
    refuse_planning_flags(app);
    FilePlan f = plan_from_file(e.plan_file, e.pick, o);
    c.in = std::move(f.in);
    c.source = f.source;
    c.file_step_s = f.file_step_s;
    return c;
  }
  if (!e.pick.empty())
    throw InputError("--pick", "chooses a plan in a --plan FILE; give --plan too");
  // --format alone names the stack: the plan is checked with that framework's rules.
  if (o.framework.empty() && !e.format.empty())
    o.framework = to_string(framework_of(parse_launcher_format(e.format, "--format")));
  std::optional<Inputs> chosen = inputs_or_recommended(o);
  if (!chosen) {
    std::fprintf(stderr,
                 "shardplan: error: no plan of this model fits on this cluster (`shardplan "
                 "plan` shows the closest); no config written\n");
    return std::nullopt;
  }
  c.in = *chosen;
  if (!plan_flags_given(o)) c.source = "`shardplan plan`'s recommendation";
  for (const std::string& n : c.in.notes) std::fprintf(stderr, "shardplan: note: %s\n", n.c_str());
  return c;
}

long long seed_of(const EmitFlags& e) {
  return e.seed.empty() ? kDefaultSeed : parse_seed(e.seed, "--seed");
}

IntervalChoice interval_choice(const RunbookFlags& f) {
  return f.checkpoint_interval.empty()     ? IntervalChoice::default_interval
         : f.checkpoint_interval == "auto" ? IntervalChoice::young
                                           : IntervalChoice::given;
}

// The plan's estimate; false when it does not fit (said on stderr): exit 1 = does not fit
// (docs/design.md, exit codes), since a config that runs out of memory wastes the cluster.
bool estimate_fits(const ChosenPlan& c, EmitInputs& ei) {
  const Inputs& in = c.in;
  ei.estimate = estimate(in.model, in.training, in.plan, in.cluster);
  const double step_s = ei.estimate.time.step_s;  // the file's time.step_s: closed form
  if (c.file_step_s > 0 && std::fabs(c.file_step_s - step_s) > 0.01 * c.file_step_s) {
    std::fprintf(stderr,
                 "shardplan: warning: %s predicted a %.3f s step; this build predicts %.3f s and "
                 "uses it\n",
                 c.source.c_str(), c.file_step_s, step_s);
  }
  const MemoryBreakdown& memory = ei.estimate.memory;
  if (memory.fits) return true;
  std::fprintf(stderr,
               "shardplan: error: the plan needs %s per device of %s (stage %d); no config "
               "written (`shardplan estimate` shows where the memory goes)\n",
               format_gib(memory.total_bytes()).c_str(), format_gib(memory.capacity_bytes).c_str(),
               memory.worst_stage);
  return false;
}

void write_output(const std::string& text, const EmitFlags& e, LauncherFormat format,
                  const EmitInputs& ei) {
  if (e.output.empty()) {
    std::cout << text;
    return;
  }
  write_file_atomically(e.output, text, "--output");
  std::fprintf(stderr, "shardplan: wrote %s (%s, checkpoint every %d steps)\n", e.output.c_str(),
               to_string(format), ei.settings.checkpoint_interval_steps);
}

int run_emit(const CLI::App& app, const EmitFlags& e, const RunbookFlags& f,
             const OptimizerFlags& opt, PlanningOptions& o) {
  // Every job file its own: none may overwrite the config or another job.
  const std::vector<std::pair<const char*, std::string>> jobs = {
      {"--slurm", e.slurm}, {"--k8s", e.k8s}, {"--skypilot", e.skypilot}};
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto& [flag, path] = jobs[i];
    if (path.empty()) continue;
    if (path == e.output)
      throw InputError(flag, "'" + path + "' is also the -o config; give the job its own file");
    for (size_t k = i + 1; k < jobs.size(); ++k) {
      if (jobs[k].second == path) {
        throw InputError(jobs[k].first,
                         "'" + path + "' is also " + flag + "'s file; give each job its own file");
      }
    }
  }
  if (e.scheduler.restarts < 0 || e.scheduler.restarts > 1000) {
    throw InputError("--restarts",
                     fmt::format("{} must be between 0 and 1000", e.scheduler.restarts));
  }
  const std::optional<ChosenPlan> chosen = choose_plan(app, e, o);
  if (!chosen) return 1;
  const Inputs& in = chosen->in;
  const LauncherFormat format = e.format.empty() ? default_format(in.training.framework.id)
                                                 : parse_launcher_format(e.format, "--format");
  const long long seed = seed_of(e);
  const IntervalChoice choice = interval_choice(f);
  const RunbookInputs options = resolve_runbook_flags(f, kDefaultCheckpointIntervalS);

  EmitInputs ei{in.model, in.cluster, in.training, in.plan, {}, {}, {}, chosen->source, e.output};
  ei.optimizer = resolve_optimizer(opt, in.model);
  if (!estimate_fits(*chosen, ei)) return 1;
  ei.runbook =
      plan_runbook(in.model, in.training, in.plan, in.cluster, ei.estimate, options.options);
  ei.settings = long_run_settings(ei.runbook, choice, seed, !e.seed.empty());
  const auto problems = launcher_problems(format, ei);
  if (!problems.empty()) throw_problems(format, problems);
  for (const auto& w : runbook_warnings(ei.runbook))
    std::fprintf(stderr, "shardplan: warning: %s\n", w.c_str());
  const std::string text = emit_text(format, ei);
  // Every document is made before any is written: nothing half-written when one fails.
  const std::string slurm = e.slurm.empty() ? "" : emit_slurm(format, ei);
  const std::string k8s = e.k8s.empty() ? "" : emit_k8s(format, ei, e.scheduler);
  const std::string sky = e.skypilot.empty() ? "" : emit_skypilot(format, ei, e.scheduler);
  write_output(text, e, format, ei);
  for (const auto& [flag, path, body, what] :
       {std::tuple{"--slurm", e.slurm, slurm, "Slurm"},
        std::tuple{"--k8s", e.k8s, k8s, "Kubeflow TrainJob"},
        std::tuple{"--skypilot", e.skypilot, sky, "SkyPilot task"}}) {
    if (path.empty()) continue;
    write_file_atomically(path, body, flag);
    std::fprintf(stderr, "shardplan: wrote %s (%s, %d nodes)\n", path.c_str(), what,
                 ei.cluster.nodes());
  }
  return 0;
}

}  // namespace

Runner setup_emit(CLI::App& sub) {
  auto o = std::make_shared<PlanningOptions>();
  add_model_options(sub, *o);
  add_training_options(sub, *o);
  add_calibration_option(sub, *o);
  add_cluster_options(sub, *o);
  add_plan_options(sub, *o);
  auto e = std::make_shared<EmitFlags>();
  sub.add_option("--format", e->format, launcher_format_help())->group("Emit");
  sub.add_option("--plan", e->plan_file,
                 "A plan file from `shardplan estimate --json` or `plan --json`")
      ->group("Emit");
  sub.add_option(
         "--pick", e->pick,
         "With a `plan --json` file: recommended (default), fastest, or N (the plan ranked N)")
      ->group("Emit");
  sub.add_option("-o,--output", e->output, "Write to FILE (replaced atomically) instead of stdout")
      ->group("Emit");
  sub.add_option("--seed", e->seed, "Random seed recorded in the config (default 1234)")
      ->group("Emit");
  sub.add_option("--slurm", e->slurm,
                 "Also write a Slurm batch script to FILE that launches the config (give -o for "
                 "the config's path)")
      ->group("Emit");
  sub.add_option("--k8s", e->k8s,
                 "Also write a Kubeflow Trainer v2 TrainJob (Kubernetes) to FILE that launches the "
                 "config, with Kueue topology hints where the plan needs an NVLink domain")
      ->group("Emit");
  sub.add_option("--skypilot", e->skypilot,
                 "Also write a SkyPilot task to FILE (sky jobs launch) that launches the config")
      ->group("Emit");
  sub.add_option(
         "--image", e->scheduler.image,
         "The container image of the --k8s / --skypilot job (default " + e->scheduler.image + ")")
      ->group("Emit");
  sub.add_option("--namespace", e->scheduler.name_space, "The --k8s job's namespace")
      ->group("Emit");
  sub.add_option("--queue", e->scheduler.queue, "The --k8s job's Kueue local queue")->group("Emit");
  sub.add_option("--restarts", e->scheduler.restarts,
                 "Relaunches after a failure in the --k8s / --skypilot job (default 10)")
      ->group("Emit");
  auto f = std::make_shared<RunbookFlags>();
  add_runbook_options(
      sub, *f, "Checkpoint every DURATION (default 30min), or auto: the runbook's Young interval");
  auto opt = std::make_shared<OptimizerFlags>();
  add_optimizer_options(sub, *opt);
  CLI::App* app = &sub;
  return [o, e, f, opt, app]() { return run_emit(*app, *e, *f, *opt, *o); };
}

}  // namespace shardplan::cli
