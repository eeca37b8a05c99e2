// `shardplan plan`: the decision ladder walked in order, the recommended (simplest sufficient)
// plan, the fastest plan an exhaustive search finds, the gap between them, and the top K.
#include "shardplan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <optional>

#include "commands.hpp"
#include "options.hpp"
#include "recommended.hpp"
#include "shardplan/error.hpp"
#include "shardplan/ladder.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/render.hpp"
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

nlohmann::json estimate_json(const Candidate& c, const Inputs& in) {
  const Estimate e = estimate(in.model, in.training, c.plan, in.cluster);
  nlohmann::json j = to_json(e, c.plan, in.training, in.cluster);
  j["plan"] = to_json(c.plan);
  return j;
}

// A plan beyond even 1F1B: another schedule, virtual stages, or a first/last stage layout.
bool beyond_plain_1f1b(const ParallelPlan& p) {
  return p.pp > 1 && (p.schedule != Schedule::one_f_one_b || p.interleave > 1 ||
                      p.first_stage_layers >= 0 || p.last_stage_layers >= 0);
}

// The fastest plan with even stages and plain 1F1B: what the schedule axes win against.
std::optional<Candidate> fastest_plain_1f1b(const Inputs& in, SearchSpace space, SearchOptions so) {
  space.schedule = {Schedule::one_f_one_b};
  space.interleave = {1};
  space.lighter_ends = {false};
  so.top_k = 1;
  const SearchResult r = search(in.model, in.training, in.cluster, space, so);
  if (r.ranked.empty()) return std::nullopt;
  return r.ranked.front();
}

std::string schedule_gain(const Candidate& fastest, const Candidate& plain) {
  return fmt::format(
      "  its {} schedule{} pays: without interleaving, zero-bubble schedules or uneven stages the "
      "fastest plan ({}) takes {} per step, {} slower, with {} per device against {}\n",
      schedule_name(fastest.plan), fastest.plan.first_stage_layers >= 0 ? " and stage layout" : "",
      describe(plain.plan), format_seconds(plain.step_s),
      format_percent(plain.step_s / fastest.step_s - 1), format_gib(plain.peak_bytes),
      format_gib(fastest.peak_bytes));
}

// The fastest plan's advantage is no larger than the recommended plan's validation interval
// reaches below it: the model cannot tell them apart, so the simpler plan stays preferred.
bool advantage_inside_interval(const RungVerdict& rec, const Candidate& fastest, const Inputs& in) {
  const StepInterval si =
      step_interval(in.training.framework, in.cluster.gpu.name, rec.plan.step_s);
  return si.accuracy && fastest.step_s < rec.plan.step_s && si.within(fastest.step_s);
}

double plan_mfu(const Candidate& c, const Inputs& in) {
  return estimate(in.model, in.training, c.plan, in.cluster).throughput.mfu;
}

// Why no plan can run these inputs (fp8 on an A100), one sentence per broken rule.
nlohmann::json plan_problems_json(const Inputs& in, const PlanRules& rules) {
  const RuleContext ctx{in.model, in.training, in.cluster, rules};
  nlohmann::json out = nlohmann::json::array();
  for (const RuleProblem& r : check_inputs(ctx)) {
    const PlanProblem p = words(r, ctx);
    out.push_back(p.field + ": " + p.message);
  }
  return out;
}

// `plan --framework all`: the ladder and the search once per framework, each with its own
// profile, and the best plans side by side.
int plan_all(const PlanFlags& f, const SearchOptions& so, const LadderOptions& lo) {
  nlohmann::json rows = nlohmann::json::array();
  std::string table = fmt::format("{:<11} {:<22} {:>10}  {:<92} {:>10}\n", "framework",
                                  "recommended rung", "step", "fastest plan", "step");
  bool any = false;
  for (int i = 0; i < kFrameworks; ++i) {
    PlanningOptions o = f.o;
    o.framework = to_string(static_cast<Framework>(i));
    Inputs in;
    in.model = resolve_model(o);
    in.cluster = resolve_cluster(o, 0);
    in.training = resolve_training(o, in.model);
    fill_default_global_batch(in, 1);
    if (!check_inputs({in.model, in.training, in.cluster, so.rules}).empty()) {
      rows.push_back({{"framework", o.framework}, {"refused", plan_problems_json(in, so.rules)}});
      table += fmt::format("{:<11} cannot run these inputs: {}\n", o.framework,
                           plan_problems_json(in, so.rules).front().get<std::string>());
      continue;
    }
    const LadderResult ladder = walk_ladder(in.model, in.training, in.cluster, lo);
    const SearchResult found = search(in.model, in.training, in.cluster,
                                      full_space(in.model, in.training, in.cluster, so.rules), so);
    const RungVerdict* rec =
        ladder.stop >= 0 ? &ladder.rungs[static_cast<size_t>(ladder.stop)] : nullptr;
    const Candidate* fastest = found.ranked.empty() ? nullptr : &found.ranked.front();
    any = any || fastest;
    nlohmann::json row = {{"framework", o.framework},
                          {"profile", in.training.framework.source},
                          {"training", to_json(in.training)}};
    row["recommended"] = rec ? estimate_json(rec->plan, in) : nlohmann::json();
    if (rec) row["recommended"]["rung"] = to_string(rec->rung);
    row["fastest"] = fastest ? estimate_json(*fastest, in) : nlohmann::json();
    rows.push_back(row);
    table += fmt::format("{:<11} {:<22} {:>10}  {:<92} {:>10}\n", o.framework,
                         rec ? to_string(rec->rung) : "none",
                         rec ? format_seconds(rec->plan.step_s) : "-",
                         fastest ? describe(fastest->plan) : "no plan fits",
                         fastest ? format_seconds(fastest->step_s) : "-");
  }
  if (f.o.json) {
    print_json({{"frameworks", rows}});
  } else {
    std::cout << table;
  }
  return any ? 0 : 1;
}

}  // namespace

Runner setup_plan(CLI::App& sub) {
  auto f = std::make_shared<PlanFlags>();
  add_model_options(sub, f->o);
  add_training_options(sub, f->o);
  add_cluster_options(sub, f->o);
  sub.add_flag("--allow-tp-across-nodes", f->o.allow_tp_across_nodes,
               "Let tensor parallel span nodes")
      ->group("Plan");
  sub.add_option("--objective", f->objective, "Rank by time | cost | throughput (default time)")
      ->group("Plan");
  sub.add_option("--top", f->top, "How many plans to rank (default 10)")->group("Plan");
  sub.add_option("--max-comm-share", f->max_comm_share,
                 "Exposed communication a rung may have, as a share of the step (default 0.5)")
      ->group("Plan");
  CLI::Option* threads_flag =
      sub.add_option("--threads", f->threads, "Search threads, 1 to 1024 (default: all cores)")
          ->group("Plan");
  sub.add_option("--offload", f->o.offload,
                 "Also search plans that offload these (comma list: optimizer, params, "
                 "activations); without it, offload is searched only when nothing else fits")
      ->group("Plan");
  sub.add_option("--offload-to", f->o.offload_to, "Where --offload keeps them: cpu | nvme")
      ->group("Plan");
  add_trace_option(sub, f->trace);
  sub.add_option("--html", f->html, "Also write a self-contained HTML report with charts");
  add_json_option(sub, f->o);
  return [f, threads_flag]() {
    if (f->top < 1 || f->top > 10000)
      throw InputError("--top", fmt::format("{} is not between 1 and 10000", f->top));
    if (!(f->max_comm_share > 0 && f->max_comm_share <= 1)) {
      throw InputError("--max-comm-share",
                       fmt::format("{} is not a share between 0 and 1", f->max_comm_share));
    }
    if (threads_flag->count() > 0 && (f->threads < 1 || f->threads > 1024)) {
      throw InputError("--threads", fmt::format("{} is not between 1 and 1024 (leave it out for "
                                                "all cores)",
                                                f->threads));
    }
    PlanningRequest request;
    SearchOptions& so = request.search;
    so.objective = parse_objective(f->objective, "--objective");
    so.top_k = f->html.empty() ? f->top : std::max(f->top, kHtmlPlans);
    so.threads = f->threads;
    so.rules.allow_tp_across_nodes = f->o.allow_tp_across_nodes;
    request.max_comm_share = f->max_comm_share;
    if (f->o.framework == "all") {
      LadderOptions lo;
      lo.max_comm_share = f->max_comm_share;
      lo.rules = so.rules;
      lo.threads = f->threads;
      return plan_all(*f, so, lo);
    }
    const Inputs in = resolve_search_inputs(f->o);
    require_runnable_inputs({in.model, in.training, in.cluster, so.rules});

    PlanningResult planned = plan_cluster(in.model, in.training, in.cluster, request);
    const Offload asked = parse_offload(f->o.offload, f->o.offload_to);
    if (asked.any() || planned.found.ranked.empty()) {
      // --offload asks for it; otherwise nothing fits on the devices alone: the same search
      // with offload as an axis.
      if (asked.any())
        planned.space.offload.push_back(asked);
      else
        for (const Offload& o : offload_choices()) planned.space.offload.push_back(o);
      planned.found = search(in.model, in.training, in.cluster, planned.space, so);
    }
    const LadderResult& ladder = planned.ladder;
    const SearchSpace& space = planned.space;
    SearchResult found = planned.found;
    if (found.ranked.size() > static_cast<size_t>(f->top)) found.ranked.resize(f->top);
    const RungVerdict* rec = planned.recommended();
    const Candidate* fastest = planned.fastest();
    const std::optional<Candidate> plain = fastest && beyond_plain_1f1b(fastest->plan)
                                               ? fastest_plain_1f1b(in, space, so)
                                               : std::nullopt;
    if (rec) {
      Inputs chosen = in;
      chosen.plan = rec->plan.plan;
      write_trace(f->trace, chosen, estimate(in.model, in.training, chosen.plan, in.cluster));
    }
    if (!f->html.empty()) {
      write_html(f->html, plan_report(planned, in.model, in.training, in.cluster), "--html");
    }

    if (f->o.json) {
      nlohmann::json j = {{"model", to_json(in.model)},
                          {"cluster", to_json(in.cluster)},
                          {"training", to_json(in.training)},
                          {"ladder", to_json(ladder, in.cluster)},
                          {"max_comm_share", ladder.max_comm_share}};
      j["recommended"] = rec ? estimate_json(rec->plan, in) : nlohmann::json();
      if (rec) j["recommended"]["rung"] = to_string(rec->rung);
      j["fastest"] = fastest ? estimate_json(*fastest, in) : nlohmann::json();
      j["fastest_plain_1f1b"] = plain ? estimate_json(*plain, in) : nlohmann::json();
      if (rec && fastest) {
        j["gap"] = {{"step_ratio", rec->plan.step_s / fastest->step_s},
                    {"throughput_ratio", fastest->step_s / rec->plan.step_s},
                    {"inside_interval", advantage_inside_interval(*rec, *fastest, in)}};
      }
      nlohmann::json ranked = nlohmann::json::array();
      for (const Candidate& c : found.ranked) ranked.push_back(estimate_json(c, in));
      j["ranked"] = ranked;
      nlohmann::json rejected = nlohmann::json::object();
      for (int i = 0; i < kRules; ++i) {
        if (found.rejected[i] > 0) rejected[to_string(static_cast<RuleId>(i))] = found.rejected[i];
      }
      rejected["memory"] = found.rejected_memory;
      add_notes_json(j, in.notes);
      j["search"] = {{"objective", to_string(so.objective)},
                     {"space_size", space.size() + space.refused_points()},
                     {"evaluated", found.evaluated},
                     {"modelled", found.modelled},
                     {"feasible", found.feasible},
                     {"rejected", rejected},
                     {"seconds", found.seconds}};
      if (!fastest && found.have_least_memory) {
        j["closest"] = {{"plan", to_json(found.least_memory.plan)},
                        {"memory_bytes", found.least_memory.peak_bytes},
                        {"capacity_bytes", in.cluster.gpu.memory_bytes}};
      }
      print_json(j);
      return fastest ? 0 : 1;
    }

    const TrainingSpec& tr = in.training;
    std::cout << fmt::format(
        "model    {}\ncluster  {}\ntraining {}, {}, sequence {}, global batch {}\nframework "
        "{}\n\n",
        describe_model(in.model), describe_cluster(in.cluster),
        tr.precision == Precision::fp32 ? "fp32"
                                        : std::string(to_string(tr.precision)) + " mixed precision",
        to_string(tr.optimizer), tr.seq_len, tr.global_batch, describe_framework(tr.framework));
    for (const std::string& n : in.notes) std::cout << "note: " << n << "\n";
    std::cout << render_ladder(ladder, in.cluster) << "\n";
    if (rec) {
      std::cout << fmt::format(
          "Recommended ({}, {}): {}\n  {} per step, {:.0f} tokens/s\n", to_string(rec->rung),
          ladder.first_pass == ladder.stop ? "the simplest rung that works"
                                           : "much faster than the simplest rung that works",
          describe(rec->plan.plan), format_seconds(rec->plan.step_s), rec->plan.tokens_per_s);
      std::cout << "  interval "
                << interval_text(step_interval(tr.framework, in.cluster.gpu.name, rec->plan.step_s),
                                 tr)
                << "\n";
      const std::string w = mfu_warning(plan_mfu(rec->plan, in), tr);
      if (!w.empty()) std::cout << "  warning: " << w << "\n";
    }
    if (fastest) {
      std::cout << fmt::format("Fastest found: {}\n  {} per step, {:.0f} tokens/s",
                               describe(fastest->plan), format_seconds(fastest->step_s),
                               fastest->tokens_per_s);
      if (rec) {
        const double gap = rec->plan.step_s / fastest->step_s - 1;
        std::cout << fmt::format("; the recommended plan is {} slower", format_percent(gap));
      }
      std::cout << "\n  interval "
                << interval_text(step_interval(tr.framework, in.cluster.gpu.name, fastest->step_s),
                                 tr);
      if (rec && advantage_inside_interval(*rec, *fastest, in)) {
        std::cout
            << "\n  the fastest plan's advantage lies inside the recommended plan's interval: "
               "the model cannot tell them apart, so the simpler, recommended plan is preferred";
      }
      const std::string w = mfu_warning(plan_mfu(*fastest, in), tr);
      if (!w.empty()) std::cout << "\n  warning: " << w;
      std::cout << "\n" << (plain ? schedule_gain(*fastest, *plain) : "") << "\n";
      std::cout << fmt::format(
          "Top {} by {} ({} configurations evaluated, {} modelled, {} feasible, in {})\n",
          found.ranked.size(), to_string(so.objective), found.evaluated, found.modelled,
          found.feasible, format_seconds(found.seconds));
      std::cout << render_ranked(found.ranked, in.cluster);
      std::cout << "Rejected:";
      for (int i = 0; i < kRules; ++i) {
        if (found.rejected[i] > 0)
          std::cout << fmt::format(" {} {};", found.rejected[i], to_string(static_cast<RuleId>(i)));
      }
      if (found.rejected_memory > 0)
        std::cout << fmt::format(" {} do not fit in device memory;", found.rejected_memory);
      std::cout << "\n";
      if (so.objective != Objective::time) {
        std::cout << "note: with the GPU count and global batch fixed, time, cost and throughput "
                     "rank plans alike\n";
      }
      return 0;
    }
    std::cout << fmt::format(
        "No plan fits: of {} configurations, none fits in {} of device memory.\n", found.evaluated,
        format_gib(in.cluster.gpu.memory_bytes));
    if (found.have_least_memory) {
      std::cout << fmt::format(
          "Closest: {} needs {} per device against {} ({:.1f}x the capacity).\n",
          describe(found.least_memory.plan), format_gib(found.least_memory.peak_bytes),
          format_gib(in.cluster.gpu.memory_bytes),
          found.least_memory.peak_bytes / in.cluster.gpu.memory_bytes);
    }
    return 1;
  };
}

}  // namespace shardplan::cli
