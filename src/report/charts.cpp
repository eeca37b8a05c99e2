// Vega-Lite specs for the plan, estimate and provision reports (see charts.hpp).
#include "shardplan/charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "chart_parts.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

using nlohmann::json;

namespace charts {

json axis(const std::string& field, const std::string& type, const std::string& title) {
  return {{"field", field}, {"type", type}, {"title", title}};
}

std::vector<json> limit_rule(const std::string& channel, double value, const std::string& label) {
  const json data = {{"values", json::array({{{"v", value}, {"label", label}}})}};
  const json at = {{"field", "v"}, {"type", "quantitative"}};
  json rule = {
      {"data", data},
      {"mark",
       {{"type", "rule"}, {"color", kLimitColor}, {"strokeWidth", 2}, {"strokeDash", {6, 4}}}},
      {"encoding", {{channel, at}}}};
  // Above the plot (y = 0 is its top edge, the text's baseline sits 4 px over it): no bar, point
  // or tick is ever there.
  json text = {{"data", data},
               {"mark",
                {{"type", "text"},
                 {"color", kLimitColor},
                 {"baseline", "bottom"},
                 {"dy", -4},
                 {"fontWeight", "bold"}}},
               {"encoding", {{"y", {{"value", 0}}}, {"text", {{"field", "label"}}}}}};
  if (channel == "x") {
    text["encoding"]["x"] = at;
    text["mark"]["align"] = "center";
  } else {
    text["encoding"]["x"] = {{"value", {{"expr", "width"}}}};
    text["mark"]["align"] = "right";
    text["data"]["values"][0]["label"] = "- - " + label;
  }
  return {rule, text};
}

const std::vector<std::string>& categorical_palette() {
  // ColorBrewer "Paired" dark members and Tableau category10's cyan, olive and brown, with black.
  static const std::vector<std::string> palette = {"#1f78b4", "#ff7f00", "#33a02c", "#6a3d9a",
                                                   "#8c564b", "#e7298a", "#17becf", "#a6a600",
                                                   "#000000", "#b2df8a"};
  return palette;
}

json part_colors(const std::vector<std::pair<std::string, std::string>>& parts,
                 const std::string& title) {
  json domain = json::array();
  json range = json::array();
  for (const auto& [name, color] : parts) {
    domain.push_back(name);
    range.push_back(color);
  }
  return {{"field", "part"},
          {"type", "nominal"},
          {"title", title},
          {"sort", domain},
          {"scale", {{"domain", domain}, {"range", range}}},
          {"legend", {{"labelLimit", 320}}}};
}

}  // namespace charts

using charts::axis;
using charts::limit_rule;

namespace {

std::string shape_of(const ParallelPlan& p) {
  std::string s = p.tp > 1 && p.pp > 1 ? "TP + PP" : p.tp > 1 ? "TP" : p.pp > 1 ? "PP" : "DP only";
  if (p.cp > 1) s += " + CP";
  return s;
}

std::vector<std::pair<std::string, double>> memory_parts(const StageMemory& s) {
  return {{"weights", s.weights_bytes + s.weight_copies_bytes},  // with the recipe's copies
          {"gradients", s.gradients_bytes},
          {"optimizer state", s.optimizer_bytes},
          {"activations", s.activations_bytes},
          {"transient peaks", s.transient_bytes()},
          {"context, NCCL, fragmentation", s.overhead_bytes()}};
}

constexpr std::pair<const char*, const char*> kMemoryColors[] = {
    {"weights", "#1f78b4"},         {"gradients", "#ff7f00"},
    {"optimizer state", "#e7298a"}, {"activations", "#33a02c"},
    {"transient peaks", "#6a3d9a"}, {"context, NCCL, fragmentation", "#a6a600"}};

constexpr double kMemoryHeight = 300;  // the memory chart's plot, pixels

// The memory chart's y axis: the capacity line always in view, with room over the tallest bar
// for its total.
double memory_axis_top(const MemoryBreakdown& m) {
  double top = m.capacity_bytes;
  for (const StageMemory& s : m.stages) top = std::max(top, s.total_bytes() + s.offloaded_bytes);
  return top * 1.12 / kGiB;
}

double memory_chart_width(size_t stages) {
  return static_cast<double>(std::max<size_t>(260, std::min<size_t>(900, 60 * stages)));
}

// Where a stage's total is written (GiB, the text's baseline): over its bar, or over the
// capacity line where the words would sit on it (a bar within `words_bytes`, a line's height on
// the axis, under it).
double label_height(double top_bytes, double capacity_bytes, double words_bytes) {
  const bool on_line = top_bytes < capacity_bytes && top_bytes + words_bytes > capacity_bytes;
  return (on_line ? capacity_bytes : top_bytes) / kGiB;
}

// The words over a stage's bar, as much as its `room` (pixels) holds: the total with its unit
// and how far over the capacity, then the number of GiB alone, then nothing (the caller writes
// the fullest stage's).
std::string total_label(const StageMemory& s, double capacity, double room) {
  const double total = s.total_bytes();
  std::string label = format_gib(total);
  if (total > capacity) label += fmt::format(" ({:.1f}x capacity)", total / capacity);
  if (s.offloaded_bytes > 0) label += fmt::format(" + {} in host", format_gib(s.offloaded_bytes));
  if (charts::text_width(label, 11) <= room - 4) return label;
  std::string number = fmt::format("{:.1f}", total / kGiB);
  if (charts::text_width(number, 11) <= room - 4) return number;
  return "";
}

}  // namespace

Chart memory_chart(const MemoryBreakdown& m, const std::string& plan_name) {
  const double width = memory_chart_width(m.stages.size());
  const double axis_top_gib = memory_axis_top(m);
  const double words_bytes = 14.0 / kMemoryHeight * axis_top_gib * kGiB;  // 14 px of text
  json rows = json::array();
  json totals = json::array();
  std::vector<bool> present(std::size(kMemoryColors), false);
  for (const StageMemory& s : m.stages) {
    int order = 0;
    for (const auto& [part, bytes] : memory_parts(s)) {
      if (bytes > 0) present[static_cast<size_t>(order)] = true;
      rows.push_back(
          {{"stage", s.stage}, {"part", part}, {"order", order++}, {"gib", bytes / kGiB}});
    }
    const double total = s.total_bytes();
    totals.push_back(
        {{"stage", s.stage},
         {"gib", total / kGiB},
         {"top", (total + s.offloaded_bytes) / kGiB},
         {"label_at", label_height(total + s.offloaded_bytes, m.capacity_bytes, words_bytes)},
         {"offloaded", s.offloaded_bytes / kGiB},
         {"label", total_label(s, m.capacity_bytes, width / m.stages.size())}});
  }
  if (std::any_of(totals.begin(), totals.end(), [](const json& t) { return t["label"] == ""; })) {
    // Too narrow for a label each: the fullest stage only, written whole.
    for (json& t : totals) t["label"] = "";
    size_t worst = 0;
    for (size_t i = 0; i < m.stages.size(); ++i) {
      if (m.stages[i].total_bytes() > m.stages[worst].total_bytes()) worst = i;
    }
    totals[worst]["label"] = "fullest: " + total_label(m.stages[worst], m.capacity_bytes, width);
  }
  std::vector<std::pair<std::string, std::string>> colors;
  for (size_t i = 0; i < std::size(kMemoryColors); ++i) {
    if (present[i]) colors.emplace_back(kMemoryColors[i].first, kMemoryColors[i].second);
  }
  const json x = axis("stage", "ordinal", "pipeline stage");
  const json y_scale = {{"domain", {0, axis_top_gib}}, {"nice", false}};
  json bars = {{"data", {{"values", rows}}},
               {"transform", {{{"filter", "datum.gib > 0"}}}},
               {"mark", "bar"},
               {"encoding",
                {{"x", x},
                 {"y",
                  {{"field", "gib"},
                   {"type", "quantitative"},
                   {"stack", "zero"},
                   {"scale", y_scale},
                   {"title", "memory per device (GiB)"}}},
                 {"color", charts::part_colors(colors, "on the device")},
                 {"order", {{"field", "order"}}},
                 {"tooltip", json::array({axis("part", "nominal", "part"),
                                          {{"field", "gib"},
                                           {"type", "quantitative"},
                                           {"format", ".2f"},
                                           {"title", "GiB"}}})}}}};
  const json y_total = {{"field", "gib"}, {"type", "quantitative"}};
  json total_text = {{"data", {{"values", totals}}},
                     {"mark", {{"type", "text"}, {"baseline", "bottom"}, {"dy", -3}}},
                     {"encoding",
                      {{"x", x},
                       {"y", {{"field", "label_at"}, {"type", "quantitative"}}},
                       {"text", {{"field", "label"}}}}}};
  json layer = json::array({bars, total_text});
  if (m.worst().offloaded_bytes > 0) {
    // Offloaded bytes stand on the device's total, hollow: what the plan moved to host memory.
    const json offloaded = {{"filter", "datum.offloaded > 0"}};
    layer.push_back({{"data", {{"values", totals}}},
                     {"transform", {offloaded}},
                     {"mark",
                      {{"type", "bar"},
                       {"fill", "#ffffff"},
                       {"stroke", "#555555"},
                       {"strokeDash", {4, 3}},
                       {"strokeWidth", 1.5}}},
                     {"encoding", {{"x", x}, {"y", y_total}, {"y2", {{"field", "top"}}}}}});
    layer.push_back(
        {{"data", {{"values", totals}}},
         {"transform",
          {offloaded, {{"calculate", "(datum.gib + datum.top) / 2"}, {"as", "middle"}}}},
         {"mark", {{"type", "text"}, {"color", "#555555"}}},
         {"encoding",
          {{"x", x},
           {"y", {{"field", "middle"}, {"type", "quantitative"}}},
           {"text", {{"value", "in host memory, off the device"}}}}}});
  }
  for (json& l : limit_rule("y", m.capacity_bytes / kGiB,
                            fmt::format("capacity {}", format_gib(m.capacity_bytes)))) {
    layer.push_back(l);
  }
  return {fmt::format("Memory per device by pipeline stage: {}", plan_name),
          m.worst().offloaded_bytes > 0
              ? "Each bar is one device of a pipeline stage, stacked by what it holds; the hollow "
                "dashed box on top is what offload keeps in host memory instead. A bar above "
                "the dashed capacity line does not fit."
              : "Each bar is one device of a pipeline stage, stacked by what it holds; a bar "
                "above the dashed capacity line does not fit.",
          {{"width", width}, {"height", kMemoryHeight}, {"layer", layer}}};
}

namespace {

const char* verdict_of(const RungVerdict& v) {
  return v.passes() ? "passes" : v.fits ? "fits, too much comm" : "does not fit";
}

// One row per rung: its memory, its exposed-communication share, and the words at each bar's end
// (a 0.1% bar is a hairline, and a rung that does not fit has no share: the words say it).
json ladder_rows(const LadderResult& ladder) {
  json rows = json::array();
  for (size_t i = 0; i < ladder.rungs.size(); ++i) {
    const RungVerdict& v = ladder.rungs[i];
    const double bytes = v.has_plan ? v.memory_bytes : v.need_bytes;
    const bool stop = static_cast<int>(i) == ladder.stop;
    const bool shared = v.has_plan && v.fits;
    rows.push_back({{"rung", to_string(v.rung)},
                    {"gib", bytes / kGiB},
                    {"share", shared ? v.comm_share * 100 : 0},
                    {"verdict", verdict_of(v)},
                    {"blocker", to_string(v.blocker)},
                    {"gib_label", format_gib(bytes) + (stop ? "  (the walk stops here)" : "")},
                    {"share_label", shared ? format_percent(v.comm_share) : "- (does not fit)"}});
  }
  return rows;
}

// The memory axis is logarithmic: a 60 GiB rung and a 1.2 TB one both read, and the capacity
// line sits between them. From a power of ten under the smallest to room for the labels.
json memory_scale(const json& rows, double capacity_gib) {
  double lo = capacity_gib;
  double hi = capacity_gib;
  for (const json& r : rows) {
    const double g = r["gib"].get<double>();
    if (g > 0) lo = std::min(lo, g);
    hi = std::max(hi, g);
  }
  return {{"type", "log"},
          {"domain", {std::pow(10.0, std::floor(std::log10(lo / 1.5))), hi * 5}},
          {"nice", false}};
}

// Ticks at the powers of ten only: a log axis's 2..9 labels run into each other.
json decade_ticks(const json& scale) {
  const double lo = scale["domain"][0].get<double>();
  const double hi = scale["domain"][1].get<double>();
  json ticks = json::array();
  const int decades = static_cast<int>(std::floor(std::log10(hi / lo)));
  for (int k = 0; k <= decades; ++k) ticks.push_back(lo * std::pow(10.0, k));
  return {{"values", ticks}, {"format", ",.0f"}};
}

}  // namespace

Chart ladder_chart(const LadderResult& ladder) {
  const json rows = ladder_rows(ladder);
  const double capacity = ladder.rungs.empty() ? 0 : ladder.rungs.front().capacity_bytes;
  json rung_order = json::array();
  for (const auto& r : rows) rung_order.push_back(r["rung"]);
  const json color = {{"field", "verdict"},
                      {"type", "nominal"},
                      {"title", "verdict"},
                      {"scale",
                       {{"domain", {"passes", "fits, too much comm", "does not fit"}},
                        {"range", {"#2ca02c", "#ff7f0e", "#9e9e9e"}}}}};
  const json y = {{"field", "rung"},
                  {"type", "nominal"},
                  {"sort", rung_order},
                  {"title", "rung (walked top to bottom)"}};
  // The right panel shares the left one's rungs: its rows carry no second copy of their names.
  json y_bare = y;
  y_bare["axis"] = {{"labels", false}, {"title", nullptr}, {"ticks", false}};
  auto panel = [&](const char* field, const json& scale, const char* title, const char* label,
                   double limit, const std::string& limit_label) {
    const json& rows_y = std::string(field) == "gib" ? y : y_bare;
    json x = {{"field", field}, {"type", "quantitative"}, {"scale", scale}, {"title", title}};
    const bool log = scale.value("type", "") == "log";
    if (log) x["axis"] = decade_ticks(scale);
    json bars = {{"mark", "bar"},
                 {"encoding",
                  {{"y", rows_y},
                   {"x", x},
                   // On a log axis a bar has no zero to stand on: it starts at the axis' first
                   // value.
                   {"x2", {{"datum", log ? scale["domain"][0].get<double>() : 0.0}}},
                   {"color", color},
                   {"tooltip", json::array({axis("blocker", "nominal", "blocker")})}}}};
    json words = {{"mark", {{"type", "text"}, {"align", "left"}, {"dx", 4}}},
                  {"encoding", {{"y", rows_y}, {"x", x}, {"text", {{"field", label}}}}}};
    json layer = json::array({bars, words});
    for (json& l : limit_rule("x", limit, limit_label)) layer.push_back(l);
    return json{{"width", 330}, {"height", {{"step", 34}}}, {"layer", layer}};
  };
  return {"The decision ladder",
          "Each rung's best plan: memory per device against the capacity (left, a log scale) and "
          "exposed communication against the share of the step the interconnect may take "
          "(right); the walk stops at the first green rung.",
          {{"data", {{"values", rows}}},
           {"spacing", 30},
           {"hconcat",
            {panel("gib", memory_scale(rows, capacity / kGiB), "memory per device (GiB, log)",
                   "gib_label", capacity / kGiB, fmt::format("capacity {}", format_gib(capacity))),
             panel("share", {{"domain", {0, 100}}}, "exposed communication (% of step)",
                   "share_label", ladder.max_comm_share * 100,
                   fmt::format("limit {}", format_percent(ladder.max_comm_share)))}},
           {"resolve", {{"scale", {{"y", "shared"}}}}}}};
}

namespace {

// The layouts a search point can have, each in its own colour on every page (shape_of's names).
constexpr std::pair<const char*, int> kLayouts[] = {
    {"DP only", 0}, {"DP only + CP", 6}, {"TP", 1},      {"TP + CP", 7},
    {"PP", 2},      {"PP + CP", 9},      {"TP + PP", 3}, {"TP + PP + CP", 5}};
// ZeRO stages as four shapes a reader tells apart at a glance (no two triangles).
constexpr const char* kZeroShapes[] = {"circle", "square", "triangle-up", "cross"};
constexpr double kSearchWidth = 700;
constexpr double kSearchHeight = 340;
constexpr double kSearchPoint = 50;

}  // namespace

Chart search_chart(const std::vector<Candidate>& plans, const ParallelPlan* recommended,
                   const ParallelPlan* fastest, double capacity_bytes) {
  auto same = [](const ParallelPlan& a, const ParallelPlan& b) {
    return describe(a) == describe(b);
  };
  std::vector<double> gibs = {capacity_bytes / kGiB};
  std::vector<double> steps;
  for (const Candidate& c : plans) {
    gibs.push_back(c.peak_bytes / kGiB);
    steps.push_back(c.step_s);
  }
  const charts::PixelScale sx = charts::fit_scale(gibs, kSearchWidth, false, false, 0.03);
  const charts::PixelScale sy = charts::fit_scale(steps, kSearchHeight, false, true, 0.06);
  std::vector<charts::Box> obstacles;
  std::vector<charts::Label> labels;
  std::vector<size_t> labelled;
  std::set<std::string> layouts;
  std::set<int> zeros;
  json rows = json::array();
  for (size_t i = 0; i < plans.size(); ++i) {
    const Candidate& c = plans[i];
    const double px = sx.to_px(c.peak_bytes / kGiB);
    const double py = sy.to_px(c.step_s);
    std::string role;
    if (fastest && same(c.plan, *fastest)) role = "fastest";
    if (recommended && same(c.plan, *recommended))
      role += role.empty() ? "recommended" : " + recommended";
    obstacles.push_back(charts::point_box(px, py, role.empty() ? kSearchPoint : 260));
    if (!role.empty()) {
      labels.push_back({.x = px, .y = py, .text = role, .bold = true, .clearance = 10});
      labelled.push_back(i);
    }
    layouts.insert(shape_of(c.plan));
    zeros.insert(c.plan.zero);
    rows.push_back({{"gib", c.peak_bytes / kGiB},
                    {"step_s", c.step_s},
                    {"zero", fmt::format("ZeRO-{}", c.plan.zero)},
                    {"layout", shape_of(c.plan)},
                    {"plan", describe(c.plan)},
                    {"role", role}});
  }
  const double capacity_px = sx.to_px(capacity_bytes / kGiB);
  obstacles.push_back({capacity_px - 2, 0, capacity_px + 2, kSearchHeight});
  const auto placed = charts::place_labels(labels, obstacles, kSearchWidth, kSearchHeight);
  for (size_t k = 0; k < labelled.size(); ++k) {
    rows[labelled[k]]["label_gib"] = sx.to_value(placed[k].first);
    rows[labelled[k]]["label_s"] = sy.to_value(placed[k].second);
  }
  const json x_axis = charts::ticks(sx, 40, "r");
  const json y_axis = charts::ticks(sy, 24, "r");
  auto x = [&](const char* field) {
    return charts::position(field, "memory per device (GiB)", sx, x_axis);
  };
  auto y = [&](const char* field) { return charts::position(field, "step time (s)", sy, y_axis); };
  const auto& palette = charts::categorical_palette();
  json layout_domain = json::array();
  json layout_range = json::array();
  for (const auto& [name, color] : kLayouts) {
    if (!layouts.contains(name)) continue;
    layout_domain.push_back(name);
    layout_range.push_back(palette[static_cast<size_t>(color)]);
  }
  const json layout_colors = {{"field", "layout"},
                              {"type", "nominal"},
                              {"title", "layout"},
                              {"scale", {{"domain", layout_domain}, {"range", layout_range}}}};
  // Each stage keeps its shape from page to page; the legend lists the stages drawn.
  json zero_domain = json::array();
  json zero_range = json::array();
  for (size_t z = 0; z < std::size(kZeroShapes); ++z) {
    if (!zeros.contains(static_cast<int>(z))) continue;
    zero_domain.push_back(fmt::format("ZeRO-{}", z));
    zero_range.push_back(kZeroShapes[z]);
  }
  const json zero_shapes = {{"field", "zero"},
                            {"type", "nominal"},
                            {"title", "ZeRO"},
                            {"scale", {{"domain", zero_domain}, {"range", zero_range}}}};
  json points = {
      {"mark", {{"type", "point"}, {"filled", true}, {"opacity", 0.75}, {"size", kSearchPoint}}},
      {"encoding",
       {{"x", x("gib")},
        {"y", y("step_s")},
        {"color", layout_colors},
        {"shape", zero_shapes},
        {"tooltip", json::array({axis("plan", "nominal", "plan")})}}}};
  const json marked = {{"filter", "datum.role != ''"}};
  json rings = {
      {"transform", {marked}},
      {"mark", {{"type", "point"}, {"size", 260}, {"strokeWidth", 2}, {"color", "black"}}},
      {"encoding", {{"x", x("gib")}, {"y", y("step_s")}}}};
  json label_marks = {
      {"transform", {marked}},
      {"mark",
       {{"type", "text"}, {"align", "center"}, {"baseline", "middle"}, {"fontWeight", "bold"}}},
      {"encoding", {{"x", x("label_gib")}, {"y", y("label_s")}, {"text", {{"field", "role"}}}}}};
  json layer = json::array({points, rings, label_marks});
  for (json& l : limit_rule("x", capacity_bytes / kGiB,
                            fmt::format("capacity {}", format_gib(capacity_bytes)))) {
    layer.push_back(l);
  }
  return {fmt::format("Searched plans ({} fastest that fit)", plans.size()),
          "Each point is a plan that fits: lower is faster, left leaves more memory free; colour "
          "is the layout, shape the ZeRO stage; the ringed points are the ladder's recommended "
          "plan and the search's fastest.",
          {{"width", kSearchWidth},
           {"height", kSearchHeight},
           {"data", {{"values", rows}}},
           {"layer", layer}}};
}

}  // namespace shardplan
