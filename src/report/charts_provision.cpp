// The provision report's chart: time to train vs cost of every option (see charts.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chart_parts.hpp"
#include "shardplan/charts.hpp"
#include "shardplan/table.hpp"

namespace shardplan {

using charts::axis;
using nlohmann::json;

namespace {

constexpr double kWidth = 760;
constexpr double kHeight = 440;
constexpr double kPointSize = 80;
constexpr double kRingSize = 420;

// A GPU type's colour and shape, the same on every page whatever else is offered beside it.
// Ten colours far apart (categorical_palette) for sixteen presets: where two share a colour they
// are siblings of one family, told apart by shape. A GPU given as a file takes a colour by its
// place among those offered, and a shape no preset of that colour has.
constexpr std::pair<const char*, int> kGpuColours[] = {
    {"H100-SXM", 0},  {"B200", 1},  {"A100-80GB", 2},      {"H200", 3},
    {"MI300X", 4},    {"GB200", 5}, {"B300", 6},           {"MI355X", 7},
    {"H100-PCIe", 8}, {"L40S", 9},  {"H100-96GB-500W", 0}, {"A100-40GB", 2},
    {"MI325X", 4},    {"GB300", 6}, {"H800", 8},           {"V100", 9}};

constexpr const char* kShapes[] = {"circle", "square", "triangle-up", "diamond", "cross"};

std::pair<std::string, std::string> gpu_look(const std::string& gpu, const json& offered) {
  const std::vector<std::string>& palette = charts::categorical_palette();
  const auto* row = std::find_if(std::begin(kGpuColours), std::end(kGpuColours),
                                 [&](const auto& c) { return gpu == c.first; });
  size_t slot = 0;
  size_t sibling = 2;  // 0 for the first preset of a colour, 1 for the second, 2 for a file
  if (row != std::end(kGpuColours)) {
    slot = static_cast<size_t>(row->second);
    sibling = static_cast<size_t>(row - std::begin(kGpuColours)) < palette.size() ? 0 : 1;
  } else {
    slot = static_cast<size_t>(std::find(offered.begin(), offered.end(), gpu) - offered.begin()) %
           palette.size();
  }
  return {palette[slot], kShapes[(slot + sibling * 2) % std::size(kShapes)]};
}

// The GPU types that have an option that fits, sorted: the colour and shape domain.
json gpu_domain(const ProvisionResult& r) {
  json gpus = json::array();
  for (const ProvisionOption& o : r.options) {
    if (o.fits && std::find(gpus.begin(), gpus.end(), o.gpu) == gpus.end()) gpus.push_back(o.gpu);
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

}  // namespace

Chart provision_chart(const ProvisionResult& r, const ProvisionRequest& request) {
  std::vector<size_t> shown;  // the options that fit, the best first (its label goes first)
  for (size_t i = 0; i < r.options.size(); ++i) {
    if (r.options[i].fits) shown.push_back(i);
  }
  std::stable_partition(shown.begin(), shown.end(),
                        [&](size_t i) { return r.best && *r.best == i; });
  std::vector<double> days;
  std::vector<double> costs;
  for (size_t i : shown) {
    days.push_back(r.options[i].time_to_train_s() / 86400);
    costs.push_back(r.options[i].cost());
  }
  std::vector<double> x_values = days;
  if (request.deadline_s > 0) x_values.push_back(request.deadline_s / 86400);
  const charts::PixelScale sx = charts::fit_scale(x_values, kWidth, true, false, 0.05);
  const charts::PixelScale sy = charts::fit_scale(costs, kHeight, true, true, 0.08);

  // What the labels must stay off: every point, the best one's ring, the frontier and the
  // deadline.
  std::vector<charts::Box> obstacles;
  std::vector<std::pair<double, double>> frontier;
  for (size_t k = 0; k < shown.size(); ++k) {
    const double px = sx.to_px(days[k]);
    const double py = sy.to_px(costs[k]);
    const bool best = r.best && *r.best == shown[k];
    obstacles.push_back(charts::point_box(px, py, best ? kRingSize : kPointSize));
    if (r.options[shown[k]].pareto) frontier.emplace_back(px, py);
  }
  std::sort(frontier.begin(), frontier.end());
  for (size_t k = 1; k < frontier.size(); ++k) {
    for (const charts::Box& b : charts::segment_boxes(frontier[k - 1].first, frontier[k - 1].second,
                                                      frontier[k].first, frontier[k].second))
      obstacles.push_back(b);
  }
  if (request.deadline_s > 0) {
    const double px = sx.to_px(request.deadline_s / 86400);
    obstacles.push_back({px - 2, 0, px + 2, kHeight});
  }
  std::vector<charts::Label> labels;
  for (size_t k = 0; k < shown.size(); ++k) {
    const ProvisionOption& o = r.options[shown[k]];
    const bool best = r.best && *r.best == shown[k];
    labels.push_back(
        {.x = sx.to_px(days[k]),
         .y = sy.to_px(costs[k]),
         .text = best ? fmt::format("best: {} x {}", o.gpus, o.gpu) : std::to_string(o.gpus),
         .font_size = best ? 12.0 : 10.0,
         .bold = best,
         .clearance = best ? 13.0 : 6.0});
  }
  const auto placed = charts::place_labels(labels, obstacles, kWidth, kHeight);

  json rows = json::array();
  for (size_t k = 0; k < shown.size(); ++k) {
    const ProvisionOption& o = r.options[shown[k]];
    rows.push_back({{"days", days[k]},
                    {"cost", costs[k]},
                    {"gpu", o.gpu},
                    {"gpus", o.gpus},
                    {"pareto", o.pareto},
                    {"best", r.best && *r.best == shown[k]},
                    {"label", labels[k].text},
                    {"label_days", sx.to_value(placed[k].first)},
                    {"label_cost", sy.to_value(placed[k].second)}});
  }
  const json x_axis = charts::ticks(sx, 48, "r");
  const json y_axis = charts::ticks(sy, 22, "s", "$");
  auto x = [&](const char* field) {
    return charts::position(field, "time to train (days)", sx, x_axis);
  };
  auto y = [&](const char* field) { return charts::position(field, "cost (USD)", sy, y_axis); };
  const json domain = gpu_domain(r);
  json colors = json::array();
  json shapes = json::array();
  for (const json& gpu : domain) {
    const auto [color, shape] = gpu_look(gpu.get<std::string>(), domain);
    colors.push_back(color);
    shapes.push_back(shape);
  }
  const json color = {{"field", "gpu"},
                      {"type", "nominal"},
                      {"title", "GPU"},
                      {"scale", {{"domain", domain}, {"range", colors}}}};
  json frontier_line = {
      {"transform", {{{"filter", "datum.pareto"}}}},
      {"mark", {{"type", "line"}, {"color", "black"}, {"strokeDash", {4, 3}}}},
      {"encoding", {{"x", x("days")}, {"y", y("cost")}, {"order", {{"field", "days"}}}}}};
  json points = {
      {"mark", {{"type", "point"}, {"filled", true}, {"size", kPointSize}, {"opacity", 0.9}}},
      {"encoding",
       {{"x", x("days")},
        {"y", y("cost")},
        {"color", color},
        {"shape",
         {{"field", "gpu"},
          {"type", "nominal"},
          {"title", "GPU"},
          {"scale", {{"domain", domain}, {"range", shapes}}}}},
        {"tooltip",
         json::array(
             {axis("gpu", "nominal", "GPU"),
              axis("gpus", "quantitative", "GPUs"),
              {{"field", "days"}, {"type", "quantitative"}, {"format", ".1f"}, {"title", "days"}},
              {{"field", "cost"},
               {"type", "quantitative"},
               {"format", "$,.0f"},
               {"title", "cost"}}})}}}};
  json ring = {
      {"transform", {{{"filter", "datum.best"}}}},
      {"mark", {{"type", "point"}, {"size", kRingSize}, {"strokeWidth", 2.5}, {"color", "black"}}},
      {"encoding", {{"x", x("days")}, {"y", y("cost")}}}};
  // Each label at the spot chart_layout found free, centred there.
  auto label_layer = [&](bool best) {
    json mark = {{"type", "text"}, {"align", "center"}, {"baseline", "middle"}};
    json encoding = {
        {"x", x("label_days")}, {"y", y("label_cost")}, {"text", {{"field", "label"}}}};
    if (best) {
      mark["fontWeight"] = "bold";
      mark["fontSize"] = 12;
    } else {
      mark["fontSize"] = 10;
      encoding["color"] = color;
    }
    return json{{"transform", {{{"filter", best ? "datum.best" : "!datum.best"}}}},
                {"mark", mark},
                {"encoding", encoding}};
  };
  json layer = json::array({frontier_line, points, ring, label_layer(false), label_layer(true)});
  if (request.deadline_s > 0) {
    for (json& l : charts::limit_rule("x", request.deadline_s / 86400,
                                      "deadline " + format_seconds(request.deadline_s))) {
      layer.push_back(l);
    }
  }
  return {"Time to train vs cost",
          "Each point is a GPU type and count running its fastest plan (labels: GPU count); the "
          "dashed black line joins the Pareto frontier, where nothing is both faster and cheaper. "
          "A GPU type has the same colour and shape on every page.",
          {{"width", kWidth},
           {"height", kHeight},
           {"padding", {{"left", 5}, {"top", 24}, {"right", 20}, {"bottom", 5}}},
           {"data", {{"values", rows}}},
           {"layer", layer}}};
}

}  // namespace shardplan
