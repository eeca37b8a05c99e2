// `shardplan plan`: the decision ladder walked in order, the recommended (simplest sufficient)
// plan, the fastest plan an exhaustive search finds, the gap between them, and the top K.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <utility>

#include "assumed.hpp"
#include "commands.hpp"
#include "from_file.hpp"
#include "options.hpp"
#include "planning_flags.hpp"
#include "recommended.hpp"
#include "shardplan/error.hpp"
#include "shardplan/ladder.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/render_plan.hpp"
#include "shardplan/reports.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_time.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {
namespace {

struct PlanFlags {
  PlanningOptions o;
  std::string objective = "time";
  int top = 10;
  double max_comm_share = 0.5;
  int threads = 0;
  std::string trace;
  std::string html;
};

// Plans the --html report's scatter draws (the table and JSON still show --top).
constexpr int kHtmlPlans = 300;

// A plan beyond even 1F1B: another schedule, virtual stages, or a first/last stage layout.
bool beyond_plain_1f1b(const ParallelPlan& p) {
  return p.pp > 1 && (p.schedule != Schedule::one_f_one_b || p.interleave > 1 ||
                      p.first_stage_layers >= 0 || p.last_stage_layers >= 0);
}

// The fastest plan with even stages and plain 1F1B: what the schedule axes win against.
// Ranked again by simulation as the search's own plans are, so that the two compare.
std::optional<Candidate> fastest_plain_1f1b(const Inputs& in, const SearchSpace& space,
                                            PlanningRequest request) {
  PlanningResult r;
  r.space = space;
  r.space.schedule = {Schedule::one_f_one_b};
  r.space.interleave = {1};
  r.space.lighter_ends = {false};
  request.search.top_k = 1;
  search_space(r, in.model, in.training, in.cluster, request);
  if (r.found.ranked.empty()) return std::nullopt;
  return r.found.ranked.front();
}

// Why no plan can run these inputs (fp8 on an A100), one "field: message" per broken rule.
std::vector<std::string> plan_problems(const Inputs& in, const PlanRules& rules) {
  const RuleContext ctx{in.model, in.training, in.cluster, rules};
  std::vector<std::string> out;
  for (const RuleProblem& r : check_inputs(ctx)) {
    const PlanProblem p = words(r, ctx);
    out.push_back(p.field + ": " + p.message);
  }
  return out;
}

// `plan --framework all`: the ladder and the search once per framework, each with its own
// profile, and the best plans side by side.
int plan_all(const PlanFlags& f, const PlanningRequest& request) {
  const SearchOptions& so = request.search;
  std::vector<FrameworkPlans> rows;
  std::vector<std::string> notes;  // the defaults taken, the same for every framework
  bool any = false;
  bool calibrated = false;
  for (const FrameworkRow& framework : kFrameworkRows) {
    PlanningOptions o = f.o;
    o.framework = framework.name;
    Inputs in = resolve_uncalibrated_search_inputs(o);
    calibrated = apply_calibration(o, in, false) || calibrated;
    note_assumptions(o, in, {.plan_given = false, .prices = true});
    notes = in.notes;
    FrameworkPlans row{o.framework, in.model, in.cluster, in.training, plan_problems(in, so.rules),
                       {}};
    if (row.refused.empty()) {
      row.planned = plan_cluster(in.model, in.training, in.cluster, request);
      any = any || row.planned.fastest() != nullptr;
    }
    rows.push_back(std::move(row));
  }
  if (!f.o.calibration.empty() && !calibrated) {
    throw InputError("--calibration", f.o.calibration +
                                          " calibrates a stack and GPU class none of the "
                                          "frameworks compared runs here");
  }
  if (f.o.json) {
    print_json(to_json(rows, notes));
  } else {
    std::cout << render_framework_plans(rows, notes);
  }
  return any ? 0 : 1;
}

CLI::Option* add_plan_flags(CLI::App& sub, PlanFlags& f) {
  add_model_options(sub, f.o);
  add_training_options(sub, f.o);
  add_calibration_option(sub, f.o);
  add_cluster_options(sub, f.o);
  sub.add_option("--objective", f.objective, "Rank by time | cost | throughput (default time)")
      ->group("Plan");
  sub.add_option("--top", f.top, "How many plans to rank (default 10)")->group("Plan");
  sub.add_option("--max-comm-share", f.max_comm_share,
                 "Exposed communication a rung may have, as a share of the step (default 0.5)")
      ->group("Plan");
  CLI::Option* threads_flag =
      sub.add_option("--threads", f.threads, "Search threads, 1 to 1024 (default: all cores)")
          ->group("Plan");
  add_search_plan_options(sub, f.o, true);
  add_from_option(sub, f.o);
  add_trace_option(sub, f.trace);
  sub.add_option("--html", f.html, "Also write a self-contained HTML report with charts");
  add_json_option(sub, f.o);
  return threads_flag;
}

PlanningRequest planning_request(const PlanFlags& f, bool threads_given) {
  if (f.top < 1 || f.top > 10000)
    throw InputError("--top", fmt::format("{} is not between 1 and 10000", f.top));
  if (!(f.max_comm_share > 0 && f.max_comm_share <= 1)) {
    throw InputError("--max-comm-share",
                     fmt::format("{} is not a share between 0 and 1", f.max_comm_share));
  }
  if (threads_given && (f.threads < 1 || f.threads > 1024)) {
    throw InputError("--threads", fmt::format("{} is not between 1 and 1024 (leave it out for "
                                              "all cores)",
                                              f.threads));
  }
  PlanningRequest request;
  SearchOptions& so = request.search;
  so.objective = parse_objective(f.objective, "--objective");
  so.top_k = f.html.empty() ? f.top : std::max(f.top, kHtmlPlans);
  so.threads = f.threads;
  so.rules.allow_tp_across_nodes = f.o.allow_tp_across_nodes;
  request.max_comm_share = f.max_comm_share;
  return request;
}

// The ladder and the search; with --offload, or when nothing fits on the devices alone, the
// search again with offload as an axis.
PlanningResult plan_with_offload(const PlanFlags& f, const Inputs& in,
                                 const PlanningRequest& request) {
  PlanningResult planned = plan_cluster(in.model, in.training, in.cluster, request);
  const Offload asked =
      parse_offload(f.o.offload, f.o.offload_to, f.o.offload_activation_layers);
  if (asked.any() || planned.found.ranked.empty()) {
    if (asked.any())
      planned.space.offload.push_back(asked);
    else
      for (const Offload& o : offload_choices()) planned.space.offload.push_back(o);
    search_space(planned, in.model, in.training, in.cluster, request);
    estimate_shown(planned, in.model, in.training, in.cluster, request.search.threads);
  }
  return planned;
}

int run_plan(const PlanFlags& f, const PlanningRequest& request) {
  // --from FILE: the search runs on the file's model, cluster and training, and the file's own
  // plan is set against what it finds.
  const std::optional<Inputs> file =
      f.o.from.empty() ? std::nullopt : std::optional<Inputs>(resolve_from_file(f.o));
  Inputs in = file ? *file : resolve_search_inputs(f.o);
  note_assumptions(f.o, in, {.plan_given = false, .prices = true});
  require_runnable_inputs({in.model, in.training, in.cluster, request.search.rules});
  PlanningResult planned = plan_with_offload(f, in, request);
  const RungVerdict* rec = planned.recommended();
  const Candidate* fastest = planned.fastest();
  PlanOutcome outcome{
      in.model, in.training, in.cluster, in.notes, planned, request.search.objective, std::nullopt,
      std::nullopt};
  if (fastest && beyond_plain_1f1b(fastest->plan))
    outcome.plain_1f1b = fastest_plain_1f1b(in, planned.space, request);
  if (outcome.plain_1f1b)
    outcome.plain_1f1b_estimate =
        estimate(in.model, in.training, outcome.plain_1f1b->plan, in.cluster);
  // The trace is of the recommended plan; when the ladder recommends none, of the fastest the
  // search found; with no plan at all there is no step to draw, and the user is told so.
  const ParallelPlan* traced = rec ? &rec->plan.plan : fastest ? &fastest->plan : nullptr;
  if (traced && !f.trace.empty()) {
    Inputs chosen = in;
    chosen.plan = *traced;
    write_trace(f.trace, chosen, estimate(in.model, in.training, chosen.plan, in.cluster));
    if (!rec)
      std::fprintf(stderr, "shardplan: note: --trace: the ladder recommends no plan; %s traces "
                           "the fastest plan found\n", f.trace.c_str());
  } else if (!traced && !f.trace.empty()) {
    std::fprintf(stderr, "shardplan: note: --trace: no plan fits, so there is no step to "
                         "trace; %s was not written\n", f.trace.c_str());
  }
  if (!f.html.empty()) {
    write_html(f.html, plan_report(planned, in.model, in.training, in.cluster, in.notes), "--html");
  }
  // The report shows --top plans; the HTML scatter above drew up to kHtmlPlans.
  if (planned.found.ranked.size() > static_cast<size_t>(f.top)) {
    planned.found.ranked.resize(f.top);
    planned.ranked_estimates.resize(
        std::min(planned.ranked_estimates.size(), planned.found.ranked.size()));
  }
  const std::optional<FileVersusSearch> versus =
      file ? std::optional(file_versus_search(f.o.from, *file, planned.fastest())) : std::nullopt;
  if (f.o.json) {
    nlohmann::json j = to_json(outcome);
    if (versus) j["from"] = to_json(*versus, *file);
    print_json(std::move(j));
  } else {
    std::cout << render_plan(outcome);
    if (versus) std::cout << "\n" << render(*versus, *file);
  }
  return planned.fastest() ? 0 : 1;
}

}  // namespace

Runner setup_plan(CLI::App& sub) {
  auto f = std::make_shared<PlanFlags>();
  CLI::Option* threads_flag = add_plan_flags(sub, *f);
  return [f, threads_flag]() {
    const PlanningRequest request = planning_request(*f, threads_flag->count() > 0);
    if (f->o.framework == "all") return plan_all(*f, request);
    return run_plan(*f, request);
  };
}

}  // namespace shardplan::cli
