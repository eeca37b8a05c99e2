// Vega-Lite specs of a plan's time: the step by part, its communication (hidden and exposed) and
// the whole training run in days and dollars (see charts.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "chart_parts.hpp"
#include "shardplan/charts.hpp"
#include "shardplan/collectives.hpp"
#include "shardplan/render_provision.hpp"
#include "shardplan/table.hpp"

namespace shardplan {

using charts::axis;
using nlohmann::json;

namespace {

constexpr double kStepWidth = 620;  // the step and training-run charts' plots
constexpr double kCommWidth = 560;

// The parts of a step in the order stacked, each with its colour on every page.
constexpr std::array<std::pair<const char*, const char*>, 11> kStepParts = {{
    {"compute", "#1f78b4"},
    {"recompute", "#a6cee3"},
    {"compute lost to overlapped comm", "#6a3d9a"},
    {"pipeline bubble", "#bdbdbd"},
    {"exposed DP comm", "#ff7f00"},
    {"exposed TP comm", "#e7298a"},
    {"exposed PP comm", "#8c564b"},
    {"exposed CP comm", "#17becf"},
    {"exposed EP comm", "#a6a600"},
    {"offload (PCIe, CPU Adam, NVMe)", "#33a02c"},
    {"optimizer", "#525252"},
}};

// Seconds of each part of one step, in kStepParts' order; they add up to step_s.
std::array<double, kStepParts.size()> step_parts(const Estimate& e) {
  const StepTime& t = e.time;
  const CommBreakdown& c = e.comm;
  return {t.compute_s - t.recompute_s - t.contention_s,
          t.recompute_s,
          t.contention_s,
          t.bubble_s,
          c.total(Parallelism::data).exposed_s,
          c.tp.exposed_s,
          c.pp.exposed_s,
          c.cp.exposed_s,
          c.ep.exposed_s,
          t.offload_s,
          t.optimizer_s};
}

// Rows {plan, part, order, value} of the parts some plan has, the value scaled by `scale(e)`, and
// the colour scale listing only those parts (a legend of 4 entries for a plan of 4 parts).
std::pair<json, json> part_rows(const std::vector<std::pair<std::string, Estimate>>& plans,
                                double (*scale)(const Estimate&), const char* field) {
  std::array<bool, kStepParts.size()> present{};
  json rows = json::array();
  for (const auto& [name, e] : plans) {
    const auto parts = step_parts(e);
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i] <= 0) continue;
      present[i] = true;
      rows.push_back({{"plan", name},
                      {"part", kStepParts[i].first},
                      {"order", i},
                      {field, parts[i] * scale(e)},
                      {"s", parts[i]}});
    }
  }
  std::vector<std::pair<std::string, std::string>> colors;
  for (size_t i = 0; i < kStepParts.size(); ++i) {
    if (present[i]) colors.emplace_back(kStepParts[i].first, kStepParts[i].second);
  }
  return {rows, charts::part_colors(colors, "part")};
}

double per_step(const Estimate& /*e*/) {
  return 1;
}

// The bars are the closed form's parts; when the simulator ran, the step (and the MFU taken
// from it) is the simulated one, so the label names both.
std::string step_label(const Estimate& e) {
  if (!e.step_simulated)
    return fmt::format("{}, MFU {}", format_seconds(e.time.step_s), format_percent(e.throughput.mfu));
  return fmt::format("{} closed form; simulated {}, MFU {}", format_seconds(e.time.step_s),
                     format_seconds(e.step_s), format_percent(e.throughput.mfu));
}

}  // namespace

Chart step_chart(const std::vector<std::pair<std::string, Estimate>>& plans) {
  auto [rows, color] = part_rows(plans, per_step, "value");
  json totals = json::array();
  std::vector<std::pair<double, double>> ends_px;  // each bar and its words, for the axis' end
  for (const auto& [name, e] : plans) {
    const std::string label = step_label(e);
    ends_px.emplace_back(e.time.step_s, charts::text_width(label, 11, true));
    totals.push_back({{"plan", name}, {"value", e.time.step_s}, {"label", label}});
  }
  const json y = {{"field", "plan"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}};
  const json x = {{"field", "value"},
                  {"type", "quantitative"},
                  {"stack", "zero"},
                  {"scale", {{"domainMax", charts::end_label_domain(ends_px, kStepWidth)}}},
                  {"title", "time per step (s)"}};
  json bars = {{"data", {{"values", rows}}},
               {"mark", "bar"},
               {"encoding",
                {{"y", y},
                 {"x", x},
                 {"color", color},
                 {"order", {{"field", "order"}}},
                 {"tooltip", json::array({axis("part", "nominal", "part"),
                                          {{"field", "s"},
                                           {"type", "quantitative"},
                                           {"format", ".4f"},
                                           {"title", "seconds"}}})}}}};
  json ends = {{"data", {{"values", totals}}},
               {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 5}, {"fontWeight", "bold"}}},
               {"encoding",
                {{"y", y},
                 {"x", {{"field", "value"}, {"type", "quantitative"}}},
                 {"text", {{"field", "label"}}}}}};
  return {
      "Step time breakdown",
      "Where one optimizer step's time goes; the longer a segment, the more there is to gain "
      "by attacking it (exposed communication is what compute does not hide).",
      {{"width", kStepWidth}, {"height", {{"step", 40}}}, {"layer", json::array({bars, ends})}}};
}

namespace {

std::string words_of(Collective c) {
  std::string name = info(c).name;
  std::replace(name.begin(), name.end(), '_', ' ');
  return name;
}

// Where a group's traffic runs: its scale-up link inside one domain (an NVLink node or rack),
// that link and the NICs across domains.
std::string tier_of(const Traffic& t, const ClusterSpec& c) {
  if (t.placement.domains() <= 1) return c.intra.name + ", inside one scale-up domain";
  return (t.placement.ranks_per_domain > 1 ? c.intra.name + " + " : "") + c.nic.name +
         fmt::format(", across {} scale-up domains", t.placement.domains());
}

struct CommRow {
  std::string what;
  double time_s;
  double exposed_s;
  std::string detail;
};

// A kind's name on the communication chart.
const char* chart_name(TrafficKind k) {
  switch (k) {
    case TrafficKind::dp_grads:
      return "DP gradients";
    case TrafficKind::dp_params:
      return "DP weights";
    case TrafficKind::dp_replicate:
      return "DP replica all-reduce";
    case TrafficKind::tp:
      return "TP activations";
    case TrafficKind::pp:
      return "PP activations";
    case TrafficKind::cp:
      return "CP K/V (ring) or heads (Ulysses)";
    case TrafficKind::ep:
      return "EP dispatch + combine";
  }
  return "";
}

std::vector<CommRow> comm_rows(const Estimate& e, const ClusterSpec& cluster) {
  std::vector<CommRow> rows;
  for (TrafficKind k : kTrafficKinds) {
    const char* what = chart_name(k);
    const Traffic* t = &e.comm.of(k);
    if (!t->present()) continue;
    rows.push_back({fmt::format("{} ({})", what, words_of(t->collective)), t->time_s, t->exposed_s,
                    fmt::format("{} x {}, {}", format_count(t->calls), format_bytes(t->bytes),
                                tier_of(*t, cluster))});
  }
  const OffloadTime& o = e.time.offload;
  const double pcie_s = o.gradients_down_s + o.weights_up_s + o.params_fetch_s + o.activations_s;
  if (pcie_s > 0) {
    rows.push_back({"offload (PCIe transfers)", pcie_s, std::max(0.0, pcie_s - o.hidden_s),
                    "host memory over PCIe"});
  }
  return rows;
}

}  // namespace

Chart comm_chart(const Estimate& e, const ClusterSpec& cluster) {
  json rows = json::array();
  json ends = json::array();
  std::vector<std::pair<double, double>> ends_px;  // each bar and its words, for the axis' end
  for (const CommRow& r : comm_rows(e, cluster)) {
    // Exposed is at most the time (a collective cannot wait longer than it runs).
    const double exposed = std::min(r.exposed_s, r.time_s);
    rows.push_back(
        {{"what", r.what}, {"part", "exposed (compute waits)"}, {"order", 0}, {"s", exposed}});
    rows.push_back({{"what", r.what},
                    {"part", "hidden behind compute"},
                    {"order", 1},
                    {"s", r.time_s - exposed}});
    ends.push_back(
        {{"what", r.what},
         {"s", r.time_s},
         {"label", json::array({fmt::format("{} per step, {} exposed", format_seconds(r.time_s),
                                            format_seconds(exposed)),
                                r.detail})}});
    const std::string& longer =
        std::max(ends.back()["label"][0].get_ref<const std::string&>(), r.detail,
                 [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
    ends_px.emplace_back(r.time_s, charts::text_width(longer, 11));
  }
  const json y = {{"field", "what"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}};
  json bars = {{"data", {{"values", rows}}},
               {"mark", "bar"},
               {"encoding",
                {{"y", y},
                 {"x",
                  {{"field", "s"},
                   {"type", "quantitative"},
                   {"stack", "zero"},
                   {"scale", {{"domainMax", charts::end_label_domain(ends_px, kCommWidth)}}},
                   {"title", "seconds per step"}}},
                 {"color", charts::part_colors({{"exposed (compute waits)", "#d94801"},
                                                {"hidden behind compute", "#9ecae1"}},
                                               "communication")},
                 {"order", {{"field", "order"}}}}}};
  json words = {
      {"data", {{"values", ends}}},
      {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 5}, {"fontSize", 11}, {"dy", -6}}},
      {"encoding",
       {{"y", y},
        {"x", {{"field", "s"}, {"type", "quantitative"}}},
        {"text", {{"field", "label"}}}}}};
  return {"Communication per step",
          rows.empty() ? "This plan sends nothing between GPUs: one GPU, no offload."
                       : "Each collective's time in one step: the dark part is what compute does "
                         "not hide (the step waits for it), the light part runs under compute; "
                         "the words give calls x size per call and the link it crosses.",
          rows.empty() ? json{{"data", {{"values", json::array({{{"t", "no communication"}}})}}},
                              {"mark", {{"type", "text"}, {"fontSize", 14}}},
                              {"encoding", {{"text", {{"field", "t"}}}}}}
                       : json{{"width", kCommWidth},
                              {"height", {{"step", 40}}},
                              {"layer", json::array({bars, words})}}};
}

namespace {

double train_days(const Estimate& e) {
  return e.time.step_s > 0 ? e.train_s / e.time.step_s / 86400 : 0;
}
double train_usd(const Estimate& e) {
  return e.time.step_s > 0 ? e.train_cost / e.time.step_s : 0;
}

json run_panel(const Estimate& e, double (*scale)(const Estimate&), const char* title,
               const char* format, const std::string& total) {
  auto [rows, color] = part_rows({{"training run", e}}, scale, "value");
  const json y = {{"field", "plan"}, {"type", "nominal"}, {"title", nullptr}};
  const double whole = e.time.step_s * scale(e);
  json bars = {
      {"data", {{"values", rows}}},
      {"mark", "bar"},
      {"encoding",
       {{"y", y},
        {"x",
         {{"field", "value"},
          {"type", "quantitative"},
          {"stack", "zero"},
          {"scale",
           {{"domainMax", charts::end_label_domain({{whole, charts::text_width(total, 11, true)}},
                                                   kStepWidth)}}},
          {"axis", {{"format", format}}},
          {"title", title}}},
        {"color", color},
        {"order", {{"field", "order"}}},
        {"tooltip", json::array({axis("part", "nominal", "part"),
                                 {{"field", "value"},
                                  {"type", "quantitative"},
                                  {"format", format},
                                  {"title", title}}})}}}};
  json end = {
      {"data",
       {{"values", json::array({{{"plan", "training run"}, {"value", whole}, {"label", total}}})}}},
      {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 5}, {"fontWeight", "bold"}}},
      {"encoding",
       {{"y", y},
        {"x", {{"field", "value"}, {"type", "quantitative"}}},
        {"text", {{"field", "label"}}}}}};
  return {{"width", kStepWidth}, {"height", 44}, {"layer", json::array({bars, end})}};
}

}  // namespace

Chart training_chart(const Estimate& e) {
  json panels = json::array({run_panel(e, train_days, "time to train (days)", ",.1~f",
                                       fmt::format("{} ({} GPU-hours)", format_seconds(e.train_s),
                                                   format_count(e.train_gpu_hours)))});
  if (e.train_cost > 0) {
    panels.push_back(run_panel(e, train_usd, "cost (USD)", "$,.3s", format_usd(e.train_cost)));
  }
  return {"The training run: time and cost by part of the step",
          "The whole run split as one step is: what each part costs in days and in dollars "
          "(GPU-hours x the price per GPU-hour).",
          {{"vconcat", panels}, {"resolve", {{"scale", {{"color", "shared"}}}}}}};
}

}  // namespace shardplan
