// Which charts each --html report holds (see reports.hpp).
#include "shardplan/reports.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "shardplan/charts.hpp"
#include "shardplan/describe.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render_estimate.hpp"
#include "shardplan/render_provision.hpp"
#include "shardplan/table.hpp"
#include "shardplan/verdicts.hpp"

namespace shardplan {
namespace {

std::string training_line(const TrainingSpec& tr) {
  return fmt::format("training: {}, {}, sequence {}, global batch {}", describe_precision(tr),
                     to_string(tr.optimizer), tr.seq_len, tr.global_batch);
}

std::string plan_line(const char* what, const ParallelPlan& plan, const Estimate& e) {
  return fmt::format("{}: {}: {} per step, {:.0f} tokens/s, MFU {}", what, describe(plan),
                     format_seconds(e.step_s), e.throughput.tokens_per_s,
                     format_percent(e.throughput.mfu));
}

// The notes of what was assumed, then the MFU check's warning, listed under the banner.
void add_notes(HtmlReport& r, const std::vector<std::string>& notes, const Estimate* e) {
  for (const std::string& n : notes) r.notes.push_back("note: " + n);
  if (e && e->mfu_check.warns()) r.notes.push_back("warning: " + mfu_warning(e->mfu_check));
}

}  // namespace

HtmlReport plan_report(const PlanningResult& planned, const ModelSpec& model,
                       const TrainingSpec& training, const ClusterSpec& cluster,
                       const std::vector<std::string>& notes) {
  HtmlReport r;
  r.title =
      fmt::format("shardplan plan: {} on {} x {}", model.name, cluster.gpus, cluster.gpu.name);
  r.verdict = plan_verdict(planned, cluster);
  r.summary = {"model: " + describe_model(model), "cluster: " + describe_cluster(cluster),
               training_line(training)};
  const RungVerdict* rec = planned.recommended();
  const Candidate* fastest = planned.fastest();
  std::vector<std::pair<std::string, Estimate>> steps;
  // The engine estimated both plans with the ladder and the search (planning.hpp).
  if (rec && planned.recommended_estimate) {
    steps.emplace_back("recommended", *planned.recommended_estimate);
    r.summary.push_back(plan_line("recommended", rec->plan.plan, steps.back().second));
  }
  if (fastest && planned.fastest_estimate) {
    steps.emplace_back("fastest", *planned.fastest_estimate);
    r.summary.push_back(plan_line("fastest", fastest->plan, steps.back().second));
  }
  add_notes(r, notes, planned.recommended_estimate ? &*planned.recommended_estimate : nullptr);
  r.charts.push_back(ladder_chart(planned.ladder));
  if (fastest) {
    r.charts.push_back(search_chart(planned.found.ranked, rec ? &rec->plan.plan : nullptr,
                                    &fastest->plan, cluster.gpu.memory_bytes));
  }
  for (const auto& [name, e] : steps) r.charts.push_back(memory_chart(e.memory, name + " plan"));
  if (!steps.empty()) r.charts.push_back(step_chart(steps));
  return r;
}

HtmlReport estimate_report(const Estimate& e, const ModelSpec& model, const TrainingSpec& training,
                           const ParallelPlan& plan, const ClusterSpec& cluster,
                           const std::vector<std::string>& notes) {
  HtmlReport r;
  r.title =
      fmt::format("shardplan estimate: {} on {} x {}", model.name, cluster.gpus, cluster.gpu.name);
  r.verdict = estimate_verdict(e);
  r.summary = {"model: " + describe_model(model), "cluster: " + describe_cluster(cluster),
               training_line(training),
               plan_line("plan", plan, e) + (e.memory.fits ? "" : " (if it fit: it does not)")};
  add_notes(r, notes, &e);
  r.charts.push_back(memory_chart(e.memory, "this plan"));
  r.charts.push_back(step_chart({{"this plan", e}}));
  r.charts.push_back(comm_chart(e, cluster));
  if (e.train_s > 0) r.charts.push_back(training_chart(e));
  return r;
}

HtmlReport provision_report(const ProvisionResult& result, const ProvisionRequest& request,
                            const ModelSpec& model) {
  HtmlReport r;
  r.title = fmt::format("shardplan provision: {}", model.name);
  r.verdict = provision_verdict(result, request);
  r.summary = {
      "model: " + describe_model(model),
      fmt::format("{} options: {} GPU types x {} counts, ranked by {}", result.options.size(),
                  request.offers.size(), request.counts.size(), to_string(request.objective))};
  if (request.deadline_s > 0)
    r.summary.push_back("deadline: " + format_seconds(request.deadline_s));
  if (request.budget > 0) r.summary.push_back("budget: " + format_usd(request.budget));
  if (result.best) {
    r.summary.push_back("best: " + describe_option(result.options[*result.best]));
  } else if (result.fastest) {
    r.summary.push_back("no option meets the constraints; fastest: " +
                        describe_option(result.options[*result.fastest]));
  }
  r.summary.push_back("Prices are public on-demand list prices unless given with --gpu-hour-cost.");
  r.charts.push_back(provision_chart(result, request));
  const auto shown = result.best ? result.best : result.fastest;
  if (shown) {
    const ProvisionOption& o = result.options[*shown];
    const std::string name = fmt::format("{} x {}", o.gpus, o.gpu);
    r.charts.push_back(memory_chart(o.estimate.memory, name));
    r.charts.push_back(step_chart({{name, o.estimate}}));
  }
  return r;
}

namespace {

// The numbers and names a probe profile's charts read, checked before any is read: a field of
// the wrong type is named by its path, not met as a library exception halfway through a chart.
constexpr const char* kChartNumbers[] = {"size_bytes",
                                         "busbw_gb_per_s",
                                         "latency_us",
                                         "latency_per_step_us",
                                         "residual",
                                         "slope_from_bytes",
                                         "points",
                                         "ranks",
                                         "flops",
                                         "tflop_per_s",
                                         "m",
                                         "n",
                                         "k",
                                         "node_gb_per_s",
                                         "rank_gb_per_s",
                                         "peak_tflops",
                                         "in_step_share"};
constexpr const char* kChartNames[] = {"tier", "collective", "dtype", "move", "device"};

bool chart_number(const std::string& key) {
  return std::find(std::begin(kChartNumbers), std::end(kChartNumbers), key) !=
         std::end(kChartNumbers);
}
bool chart_name(const std::string& key) {
  return std::find(std::begin(kChartNames), std::end(kChartNames), key) != std::end(kChartNames);
}

void check_chart_fields(const nlohmann::json& j, const std::string& path,
                        const std::string& origin) {
  auto wrong = [&](const std::string& at, const char* want, const nlohmann::json& got) {
    throw InputError(origin, fmt::format("{}: expected {}, got {} (a profile written by "
                                         "`shardplan probe` has one)",
                                         at, want, got.dump()));
  };
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      check_chart_fields(j[i], fmt::format("{}[{}]", path, i), origin);
    return;
  }
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string at = path + "." + it.key();
    if (chart_number(it.key()) && !it->is_number()) wrong(at, "a number", *it);
    if (chart_name(it.key()) && !it->is_string()) wrong(at, "a name (a string)", *it);
    if (it.key() == "curve") {
      if (!it->is_array()) wrong(at, "an array of [flops, efficiency] pairs", *it);
      for (size_t i = 0; i < it->size(); ++i) {
        const nlohmann::json& p = (*it)[i];
        if (!p.is_array() || p.size() < 2 || !p[0].is_number() || !p[1].is_number())
          wrong(fmt::format("{}[{}]", at, i), "a [flops, efficiency] pair of numbers", p);
      }
    }
    check_chart_fields(*it, at, origin);
  }
}

}  // namespace

HtmlReport probe_report(const nlohmann::json& profile, const std::string& origin) {
  if (!profile.contains("measurements")) {
    throw InputError(origin,
                     "not a probe profile: no measurements (write one with `shardplan "
                     "probe`)");
  }
  for (const char* part : {"fit", "measurements"}) {
    if (!profile.contains(part)) continue;
    if (!profile[part].is_object())
      throw InputError(origin,
                       fmt::format("{}: expected an object, got {}", part, profile[part].dump()));
    check_chart_fields(profile[part], part, origin);
  }
  HtmlReport r;
  r.title = "shardplan probe: " + profile.value("name", origin);
  r.verdict = probe_verdict(profile);
  const std::string file = origin.substr(origin.find_last_of('/') + 1);
  r.summary = {profile.value("description", std::string("a probe profile")), "profile: " + file};
  const nlohmann::json prov = profile.value("provenance", nlohmann::json::object());
  if (prov.contains("backend")) {
    r.summary.push_back(
        fmt::format("back-end {}, {}", prov.value("backend", ""), prov.value("date", "")));
  }
  const nlohmann::json m = profile.value("measurements", nlohmann::json::object());
  if (m.contains("collectives") && m["collectives"].is_array() && !m["collectives"].empty()) {
    r.charts.push_back(busbw_chart(profile, origin));
  } else {
    // One rank (one GPU, or one CPU process) has no link to measure: the page shows what was
    // measured and says why the bandwidth chart is missing.
    r.notes.push_back(
        "No collective was measured: every tier needs two ranks (two GPUs in a node, or two "
        "nodes), so this profile keeps its preset's links. Start the probe on 2 or more GPUs for "
        "the bus-bandwidth chart.");
  }
  if (m.contains("gemm") && m["gemm"].is_array() && !m["gemm"].empty()) {
    r.charts.push_back(gemm_chart(profile, origin));
  }
  if (m.contains("host") && m["host"].is_array() && !m["host"].empty()) {
    r.charts.push_back(host_chart(profile, origin));
  }
  return r;
}

}  // namespace shardplan
