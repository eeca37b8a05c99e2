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

// The GPU types that have an option that fits, in the order offered: the colour domain.
json gpu_domain(const ProvisionResult& r) {
  json gpus = json::array();
  for (const ProvisionOption& o : r.options) {
    if (o.fits && std::find(gpus.begin(), gpus.end(), o.gpu) == gpus.end()) gpus.push_back(o.gpu);
  }
  std::sort(gpus.begin(), gpus.end());
  return gpus;
}

// The geometric middle of the options' times to train: labels of points to its right are drawn
// to the left of the point, so none runs past the plot's right edge.
double middle_days(const ProvisionResult& r) {
  double lo = 0;
  double hi = 0;
  for (const ProvisionOption& o : r.options) {
    if (!o.fits) continue;
    const double d = o.time_to_train_s() / 86400;
    lo = lo == 0 ? d : std::min(lo, d);
    hi = std::max(hi, d);
  }
  return lo > 0 ? std::sqrt(lo * hi) : 0;
}

// The GPU counts beside the points, above and to the right on the left half (the frontier falls
// to the right, below them) and below and to the left on the right half (it comes in from the
// left, above them): the dashed frontier never strikes through a label.
std::vector<json> count_labels(const json& x, const json& y, const json& color) {
  std::vector<json> layers;
  for (bool right : {false, true}) {
    layers.push_back(
        {{"transform", {{{"filter", right ? "datum.right" : "!datum.right"}}}},
         {"mark",
          {{"type", "text"},
           {"align", right ? "right" : "left"},
           {"baseline", right ? "top" : "bottom"},
           {"dx", right ? -5 : 5},
           {"dy", right ? 5 : -4},
           {"fontSize", 10}}},
         {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "label"}}}, {"color", color}}}});
  }
  return layers;
}

}  // namespace

Chart provision_chart(const ProvisionResult& r, const ProvisionRequest& request) {
  const double middle = middle_days(r);
  json rows = json::array();
  for (size_t i = 0; i < r.options.size(); ++i) {
    const ProvisionOption& o = r.options[i];
    if (!o.fits) continue;
    const bool best = r.best && *r.best == i;
    const double days = o.time_to_train_s() / 86400;
    rows.push_back({{"days", days},
                    {"cost", o.cost()},
                    {"gpu", o.gpu},
                    {"gpus", o.gpus},
                    {"pareto", o.pareto},
                    {"right", days > middle},
                    {"label", best ? "" : std::to_string(o.gpus)},
                    {"best_label", fmt::format("best: {} x {}", o.gpus, o.gpu)},
                    {"best", best}});
  }
  const json x = {{"field", "days"},
                  {"type", "quantitative"},
                  {"title", "time to train (days)"},
                  {"scale", {{"type", "log"}, {"nice", false}, {"padding", 24}}}};
  const json y = {{"field", "cost"},
                  {"type", "quantitative"},
                  {"title", "cost (USD)"},
                  {"scale", {{"type", "log"}, {"nice", false}, {"padding", 24}}},
                  {"axis", {{"format", "$.2s"}}}};
  const json domain = gpu_domain(r);
  const std::vector<std::string>& palette = charts::categorical_palette();
  json range = json::array();
  for (size_t i = 0; i < domain.size(); ++i) range.push_back(palette[i % palette.size()]);
  const json color = {{"field", "gpu"},
                      {"type", "nominal"},
                      {"title", "GPU"},
                      {"scale", {{"domain", domain}, {"range", range}}}};
  json frontier = {{"transform", {{{"filter", "datum.pareto"}}}},
                   {"mark", {{"type", "line"}, {"color", "black"}, {"strokeDash", {4, 3}}}},
                   {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "days"}}}}}};
  json points = {
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 80}, {"opacity", 0.9}}},
      {"encoding",
       {{"x", x},
        {"y", y},
        {"color", color},
        {"shape", {{"field", "gpu"}, {"type", "nominal"}, {"title", "GPU"}}},
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
      {"mark", {{"type", "point"}, {"size", 420}, {"strokeWidth", 2.5}, {"color", "black"}}},
      {"encoding", {{"x", x}, {"y", y}}}};
  json best_label = {
      {"transform", {{{"filter", "datum.best"}}}},
      {"mark", {{"type", "text"}, {"dy", -20}, {"fontWeight", "bold"}, {"fontSize", 12}}},
      {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "best_label"}}}}}};
  json layer = json::array({frontier, points});
  for (json& l : count_labels(x, y, color)) layer.push_back(l);
  layer.push_back(ring);
  layer.push_back(best_label);
  if (request.deadline_s > 0) {
    for (json& l : charts::limit_rule("x", request.deadline_s / 86400,
                                      "deadline " + format_seconds(request.deadline_s))) {
      layer.push_back(l);
    }
  }
  return {"Time to train vs cost",
          "Each point is a GPU type and count running its fastest plan (labels: GPU count); the "
          "dashed black line joins the Pareto frontier, where nothing is both faster and cheaper.",
          {{"width", 760},
           {"height", 440},
           {"padding", {{"left", 5}, {"top", 24}, {"right", 20}, {"bottom", 5}}},
           {"data", {{"values", rows}}},
           {"layer", layer}}};
}

}  // namespace shardplan
