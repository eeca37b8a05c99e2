// The recommended plan for commands given no plan flags: the ladder walked as `plan` walks it.
#include "recommended.hpp"

#include <fmt/format.h>

#include <set>

#include "planning_flags.hpp"
#include "planning_inputs.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/ladder.hpp"
#include "shardplan/plan_file.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/search.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {

bool plan_flags_given(const PlanningOptions& o) {
  return !plan_flags_in(o).empty();
}

Inputs resolve_uncalibrated_search_inputs(const PlanningOptions& o) {
  Inputs in;
  in.model = resolve_model(o);
  in.cluster = resolve_cluster(o, 0);
  in.training = resolve_training(o, in.model);
  fill_default_global_batch(in, 1);
  note_precision(in);
  note_cluster(in);
  return in;
}

Inputs resolve_search_inputs(const PlanningOptions& o) {
  Inputs in = resolve_uncalibrated_search_inputs(o);
  apply_calibration(o, in);
  return in;
}

std::optional<Inputs> recommended_inputs(const PlanningOptions& o, int threads) {
  Inputs in = resolve_search_inputs(o);
  LadderOptions lo;
  lo.rules.allow_tp_across_nodes = o.allow_tp_across_nodes;
  // Inputs no plan can run (fp8 on an A100) are bad input, as in `estimate` and `plan`.
  require_runnable_inputs({in.model, in.training, in.cluster, lo.rules});
  lo.threads = threads;
  const LadderResult ladder = walk_ladder(in.model, in.training, in.cluster, lo);
  if (ladder.stop >= 0) {
    const RungVerdict& v = ladder.rungs[static_cast<size_t>(ladder.stop)];
    in.plan = v.plan.plan;
    in.notes.push_back(fmt::format(
        "plan: {}, the one `shardplan plan` recommends (rung {}, the ladder's stop); give "
        "--tp/--pp/--zero/--micro-batch/--recompute to choose another",
        describe(in.plan), to_string(v.rung)));
    return in;
  }
  PlanningRequest request;  // the search as `plan` runs it, re-rank included
  request.search.top_k = 1;
  request.search.threads = threads;
  request.search.rules = lo.rules;
  PlanningResult found;
  found.space = full_space(in.model, in.training, in.cluster, request.search.rules);
  search_space(found, in.model, in.training, in.cluster, request);
  if (found.found.ranked.empty()) return std::nullopt;
  in.plan = found.found.ranked.front().plan;
  in.notes.push_back(fmt::format(
      "plan: {}, the fastest `shardplan plan` finds (no rung of its ladder passes); give "
      "--tp/--pp/--zero/--micro-batch/--recompute to choose another",
      describe(in.plan)));
  return in;
}

std::optional<Inputs> inputs_or_recommended(const PlanningOptions& o) {
  if (!o.from.empty()) return resolve_inputs(o);  // the file's plan, said in its notes
  const std::vector<std::string> given = plan_flags_in(o);
  if (given.empty()) return recommended_inputs(o);
  Inputs in = resolve_inputs(o);
  std::string flags;
  for (const std::string& name : given) flags += (flags.empty() ? "" : ", ") + name;
  in.notes.push_back(fmt::format(
      "plan: {}, the one the plan flags describe ({}; the other plan flags at their defaults); "
      "leave out every plan flag for the one `shardplan plan` recommends",
      describe(in.plan), flags));
  return in;
}

FilePlan plan_from_file(const std::string& path, const std::string& pick,
                        const PlanningOptions& o) {
  const PlanPick which = parse_plan_pick(pick, "--pick");
  const PlanFile f = read_plan_file(read_text_file(path, "--plan"), path, which);
  FilePlan out;
  out.in = Inputs{f.model, f.cluster, f.training, f.plan, {}};
  if (!o.tokens.empty()) out.in.training.tokens = parse_count(o.tokens, "--tokens");
  out.source = f.where;
  out.file_step_s = f.step_s;
  return out;
}

void refuse_planning_flags(const CLI::App& sub) {
  static const std::set<std::string> groups = {"Model", "Training", "Cluster", "Plan"};
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() == 0 || groups.count(opt->get_group()) == 0 || opt->get_name() == "--tokens")
      continue;
    throw InputError(opt->get_name(), "the plan comes from --plan FILE; drop " + opt->get_name() +
                                          " or describe the plan with flags instead of --plan");
  }
}

}  // namespace shardplan::cli
