// Renderers for `shardplan plan`: the inputs, the ladder, the recommended and the fastest plan,
// the top-K table and the search's counts, and their JSON; `plan --framework all` side by side.
#include "shardplan/render_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/consistency.hpp"
#include "shardplan/describe.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render_estimate.hpp"
#include "shardplan/render_ladder.hpp"
#include "shardplan/render_memory.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

std::string render_ranked(const std::vector<Candidate>& ranked, const ClusterSpec& c) {
  Table t({{"#"},
           {"plan", Table::Align::left},
           {"step"},
           {"tokens/s"},
           {"memory/device"},
           {"exposed comm"}});
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Candidate& x = ranked[i];
    t.add_row({std::to_string(i + 1), describe(x.plan), format_seconds(x.step_s),
               fmt::format("{:.0f}", x.tokens_per_s),
               fmt::format("{} ({})", format_gib(x.peak_bytes),
                           format_percent(x.peak_bytes / c.gpu.memory_bytes)),
               format_percent(share_of_step(x.exposed_comm_s, x.step_s))});
  }
  return t.render();
}

nlohmann::json candidate_json(const ParallelPlan& plan, const Estimate& e,
                              const TrainingSpec& training, const ClusterSpec& cluster) {
  nlohmann::json j = to_json(e, plan, training, cluster);
  j["plan"] = to_json(plan);
  return j;
}

namespace {

// The warning the engine's MFU check gives a plan; "" if none.
std::string mfu_warning_of(const std::optional<Estimate>& e) {
  return e ? mfu_warning(e->mfu_check) : "";
}

std::string interval_of(const Candidate& c, const PlanOutcome& o) {
  return interval_text(step_interval(o.training.framework, o.cluster.gpu, c.step_s,
                                     plan_scope(o.model, o.training, c.plan, o.cluster)),
                       o.training);
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

nlohmann::json search_json(const PlanOutcome& o) {
  const SearchResult& found = o.planned.found;
  nlohmann::json rejected = nlohmann::json::object();
  for (int i = 0; i < kRules; ++i) {
    if (found.rejected[i] > 0) rejected[to_string(static_cast<RuleId>(i))] = found.rejected[i];
  }
  rejected["memory"] = found.rejected_memory;
  return {{"objective", to_string(o.objective)},
          {"space_size", o.planned.space.size() + o.planned.space.refused_points()},
          {"evaluated", found.evaluated},
          {"modelled", found.modelled},
          {"feasible", found.feasible},
          {"rejected", rejected},
          {"seconds", found.seconds}};
}

std::string k_rule_text(const RerankRule& rule) {
  return fmt::format("the plans within {} of the best closed-form step, at most {}",
                     format_percent(rule.within), rule.at_most);
}

nlohmann::json rerank_json(const Rerank& r) {
  nlohmann::json j = {{"candidates", r.candidates},
                      {"simulated", r.simulated},
                      {"k_rule", k_rule_text(r.rule)},
                      {"within", r.rule.within},
                      {"at_most", r.rule.at_most},
                      {"changed", r.changed}};
  if (r.simulated > 0) {
    j["closed_form_best"] = {{"plan", to_json(r.closed_form_best.plan)},
                             {"step_s", r.closed_form_best.step_s}};
    j["chosen_closed_form_step_s"] = r.chosen_closed_form_s;
    j["chosen_simulated_step_s"] = r.chosen_simulated_s;
  }
  return j;
}

// How the simulation re-ranked the search's best plans, and what it changed.
std::string rerank_text(const Rerank& r) {
  if (r.simulated == 0) return "";
  std::string out =
      fmt::format("Re-ranked the {} fastest of {} candidates by simulation ({}):\n  ",
                  r.simulated, r.candidates, k_rule_text(r.rule));
  if (r.changed) {
    out += fmt::format(
        "the closed forms' best, {} ({}), is not the simulated best: the fastest plan takes {} "
        "closed-form, {} simulated\n",
        describe(r.closed_form_best.plan), format_seconds(r.closed_form_best.step_s),
        format_seconds(r.chosen_closed_form_s), format_seconds(r.chosen_simulated_s));
  } else {
    out += fmt::format("the closed forms' best stays first: {} closed-form, {} simulated\n",
                       format_seconds(r.chosen_closed_form_s),
                       format_seconds(r.chosen_simulated_s));
  }
  return out + "  the simulated plans show their simulated step; the others, the closed form's\n";
}

// "model ... cluster ... training ... framework ...", then the notes.
std::string inputs_text(const PlanOutcome& o) {
  const TrainingSpec& tr = o.training;
  std::string out = fmt::format(
      "model    {}\ncluster  {}\ntraining {}, {}, sequence {}, global batch {}\nframework "
      "{}\n\n",
      describe_model(o.model), describe_cluster(o.cluster), describe_precision(tr),
      to_string(tr.optimizer), tr.seq_len, tr.global_batch, describe_framework(tr.framework));
  for (const std::string& n : o.notes) out += "note: " + n + "\n";
  return out;
}

// "  memory 60.43 GiB of 79.65 GiB per device, 19.22 GiB to spare": the headroom a plan leaves
// (and what --headroom asked), from its estimate.
std::string memory_line(const std::optional<Estimate>& e) {
  if (!e || e->memory.stages.empty()) return "";
  return fmt::format("  memory {} of {} per device, {}", format_gib(e->memory.total_bytes()),
                     format_gib(e->memory.capacity_bytes), spare_text(e->memory));
}

std::string recommended_text(const RungVerdict& rec, const PlanOutcome& o) {
  const LadderResult& l = o.planned.ladder;
  std::string out =
      fmt::format("Recommended ({}, {}): {}\n  {} per step, {:.0f} tokens/s\n", to_string(rec.rung),
                  l.first_pass == l.stop ? "the simplest rung that works"
                                         : "much faster than the simplest rung that works",
                  describe(rec.plan.plan), format_seconds(rec.plan.step_s), rec.plan.tokens_per_s);
  out += "  interval " + interval_of(rec.plan, o) + "\n";
  if (const std::string mem = memory_line(o.planned.recommended_estimate); !mem.empty())
    out += mem + "\n";
  const std::string w = mfu_warning_of(o.planned.recommended_estimate);
  if (!w.empty()) out += "  warning: " + w + "\n";
  if (o.planned.recommended_estimate) {
    const std::string run = training_run_text(*o.planned.recommended_estimate, o.training);
    if (!run.empty()) out += "  " + run + "\n";
  }
  return out;
}

std::string fastest_text(const Candidate& fastest, const RungVerdict* rec, const PlanOutcome& o) {
  std::string out =
      fmt::format("Fastest found: {}\n  {} per step, {:.0f} tokens/s", describe(fastest.plan),
                  format_seconds(fastest.step_s), fastest.tokens_per_s);
  if (rec) {
    const double gap = rec->plan.step_s / fastest.step_s - 1;
    out += fmt::format("; the recommended plan is {} slower", format_percent(gap));
  }
  out += "\n  interval " + interval_of(fastest, o);
  if (rec && o.planned.advantage_inside_interval) {
    out +=
        "\n  the fastest plan's advantage lies inside the recommended plan's interval: "
        "the model cannot tell them apart, so the simpler, recommended plan is preferred";
  }
  if (const std::string mem = memory_line(o.planned.fastest_estimate); !mem.empty())
    out += "\n" + mem;
  const std::string w = mfu_warning_of(o.planned.fastest_estimate);
  if (!w.empty()) out += "\n  warning: " + w;
  if (o.planned.fastest_estimate) {
    const std::string run = training_run_text(*o.planned.fastest_estimate, o.training);
    if (!run.empty()) out += "\n  " + run;
  }
  return out + "\n" + (o.plain_1f1b ? schedule_gain(fastest, *o.plain_1f1b) : "") + "\n";
}

// The top K, what the search visited, and why it rejected the rest.
std::string ranking_text(const PlanOutcome& o) {
  const SearchResult& found = o.planned.found;
  std::string out =
      fmt::format("Top {} by {} (of {} plans in the search space, {} passed the rules and were "
                  "modelled, {} fit; searched in {})\n",
                  found.ranked.size(), to_string(o.objective), found.evaluated, found.modelled,
                  found.feasible, format_seconds(found.seconds));
  out += render_ranked(found.ranked, o.cluster);
  out += rerank_text(o.planned.rerank);
  out += "Rejected:";
  for (int i = 0; i < kRules; ++i) {
    if (found.rejected[i] > 0)
      out += fmt::format(" {} {};", found.rejected[i], to_string(static_cast<RuleId>(i)));
  }
  if (found.rejected_memory > 0)
    out += fmt::format(" {} do not fit in device memory;", found.rejected_memory);
  out += "\n";
  if (o.objective != Objective::time) {
    out +=
        "note: with the GPU count and global batch fixed, time, cost and throughput "
        "rank plans alike\n";
  }
  return out;
}

std::string no_plan_text(const PlanOutcome& o) {
  const SearchResult& found = o.planned.found;
  const double capacity = o.cluster.usable_bytes();
  std::string out =
      fmt::format("No plan fits: of {} configurations, none fits in {} of device memory{}.\n",
                  found.evaluated, format_gib(o.cluster.gpu.memory_bytes),
                  headroom_clause(o.cluster));
  if (found.have_least_memory) {
    out += fmt::format("Closest: {} needs {} per device against {} ({:.1f}x {}).\n",
                       describe(found.least_memory.plan), format_gib(found.least_memory.peak_bytes),
                       format_gib(capacity), found.least_memory.peak_bytes / capacity,
                       o.cluster.headroom_bytes > 0 ? "what may be used" : "the capacity");
  }
  return out;
}

}  // namespace

std::string render_plan(const PlanOutcome& o) {
  const RungVerdict* rec = o.planned.recommended();
  const Candidate* fastest = o.planned.fastest();
  std::string out = inputs_text(o) + render_ladder(o.planned.ladder, o.cluster) + "\n";
  if (rec) out += recommended_text(*rec, o);
  if (!fastest) return out + no_plan_text(o);
  return out + fastest_text(*fastest, rec, o) + ranking_text(o);
}

nlohmann::json to_json(const PlanOutcome& o) {
  const RungVerdict* rec = o.planned.recommended();
  const Candidate* fastest = o.planned.fastest();
  const SearchResult& found = o.planned.found;
  nlohmann::json j = {{"model", to_json(o.model)},
                      {"cluster", to_json(o.cluster)},
                      {"training", to_json(o.training)},
                      {"ladder", to_json(o.planned.ladder, o.cluster)},
                      {"max_comm_share", o.planned.ladder.max_comm_share}};
  const PlanningResult& pr = o.planned;
  j["recommended"] = rec && pr.recommended_estimate
                         ? candidate_json(rec->plan.plan, *pr.recommended_estimate, o.training,
                                          o.cluster)
                         : nlohmann::json();
  if (rec) j["recommended"]["rung"] = to_string(rec->rung);
  j["fastest"] = fastest && pr.fastest_estimate
                     ? candidate_json(fastest->plan, *pr.fastest_estimate, o.training, o.cluster)
                     : nlohmann::json();
  j["fastest_plain_1f1b"] =
      o.plain_1f1b && o.plain_1f1b_estimate
          ? candidate_json(o.plain_1f1b->plan, *o.plain_1f1b_estimate, o.training, o.cluster)
          : nlohmann::json();
  if (rec && fastest) {
    j["gap"] = {{"step_ratio", rec->plan.step_s / fastest->step_s},
                {"throughput_ratio", fastest->step_s / rec->plan.step_s},
                {"inside_interval", pr.advantage_inside_interval}};
  }
  nlohmann::json ranked = nlohmann::json::array();
  for (size_t i = 0; i < found.ranked.size() && i < pr.ranked_estimates.size(); ++i)
    ranked.push_back(
        candidate_json(found.ranked[i].plan, pr.ranked_estimates[i], o.training, o.cluster));
  j["ranked"] = ranked;
  j["notes"] = o.notes;
  j["search"] = search_json(o);
  j["rerank"] = rerank_json(pr.rerank);
  if (!fastest && found.have_least_memory) {
    j["closest"] = {{"plan", to_json(found.least_memory.plan)},
                    {"memory_bytes", found.least_memory.peak_bytes},
                    {"capacity_bytes", o.cluster.gpu.memory_bytes}};
  }
  return j;
}

namespace {

// A warning per plan of the row whose MFU is above the framework's highest published.
std::string framework_warnings(const FrameworkPlans& r) {
  std::string out;
  for (const auto& [what, e] : {std::pair{"recommended", &r.planned.recommended_estimate},
                                std::pair{"fastest", &r.planned.fastest_estimate}}) {
    if (const std::string w = mfu_warning_of(*e); !w.empty())
      out += fmt::format("warning: {} {}: {}\n", r.framework, what, w);
  }
  return out;
}

}  // namespace

std::string render_framework_plans(const std::vector<FrameworkPlans>& rows,
                                   const std::vector<std::string>& notes) {
  std::string table = fmt::format("{:<11} {:<22} {:>10}  {:<92} {:>10}\n", "framework",
                                  "recommended rung", "step", "fastest plan", "step");
  std::string warnings;
  for (const FrameworkPlans& r : rows) {
    if (!r.refused.empty()) {
      table += fmt::format("{:<11} cannot run these inputs: {}\n", r.framework, r.refused.front());
      continue;
    }
    const RungVerdict* rec = r.planned.recommended();
    const Candidate* fastest = r.planned.fastest();
    table += fmt::format("{:<11} {:<22} {:>10}  {:<92} {:>10}\n", r.framework,
                         rec ? to_string(rec->rung) : "none",
                         rec ? format_seconds(rec->plan.step_s) : "-",
                         fastest ? describe(fastest->plan) : "no plan fits",
                         fastest ? format_seconds(fastest->step_s) : "-");
    warnings += framework_warnings(r);
  }
  for (const std::string& n : notes) table += "note: " + n + "\n";
  return table + warnings;
}

nlohmann::json to_json(const std::vector<FrameworkPlans>& rows,
                       const std::vector<std::string>& notes) {
  nlohmann::json out = nlohmann::json::array();
  for (const FrameworkPlans& r : rows) {
    if (!r.refused.empty()) {
      out.push_back({{"framework", r.framework}, {"refused", r.refused}});
      continue;
    }
    const PlanningResult& pr = r.planned;
    const RungVerdict* rec = pr.recommended();
    const Candidate* fastest = pr.fastest();
    nlohmann::json row = {{"framework", r.framework},
                          {"profile", r.training.framework.source},
                          {"training", to_json(r.training)}};
    row["recommended"] = rec && pr.recommended_estimate
                             ? candidate_json(rec->plan.plan, *pr.recommended_estimate,
                                              r.training, r.cluster)
                             : nlohmann::json();
    if (rec) row["recommended"]["rung"] = to_string(rec->rung);
    row["fastest"] = fastest && pr.fastest_estimate
                         ? candidate_json(fastest->plan, *pr.fastest_estimate, r.training,
                                          r.cluster)
                         : nlohmann::json();
    out.push_back(row);
  }
  return {{"frameworks", out}, {"notes", notes}};
}

}  // namespace shardplan
