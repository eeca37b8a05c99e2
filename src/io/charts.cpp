// Vega-Lite specs for the plan, estimate and provision reports (see charts.hpp).
#include "shardplan/charts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

using nlohmann::json;

namespace {

constexpr const char* kLimitColor = "#d62728";

json axis(const std::string& field, const std::string& type, const std::string& title) {
  return {{"field", field}, {"type", type}, {"title", title}};
}

// A horizontal dashed rule at `value` on `channel` with a label, as a layer.
json limit_rule(const std::string& channel, double value, const std::string& label) {
  const json data = {{"values", json::array({{{"v", value}, {"label", label}}})}};
  json rule = {
      {"data", data},
      {"mark",
       {{"type", "rule"}, {"color", kLimitColor}, {"strokeWidth", 2}, {"strokeDash", {6, 4}}}},
      {"encoding", {{channel, {{"field", "v"}, {"type", "quantitative"}}}}}};
  json text = {
      {"data", data},
      {"mark",
       {{"type", "text"},
        {"color", kLimitColor},
        {"align", "left"},
        {"baseline", "bottom"},
        {"dx", 4},
        {"dy", -3}}},
      {"encoding",
       {{channel, {{"field", "v"}, {"type", "quantitative"}}}, {"text", {{"field", "label"}}}}}};
  if (channel == "y") text["encoding"]["x"] = {{"value", 0}};
  if (channel == "x") {
    text["encoding"]["y"] = {{"value", 0}};
    text["mark"]["baseline"] = "top";
    text["mark"]["align"] = "right";
    text["mark"]["dx"] = -4;
    text["mark"]["dy"] = 3;
  }
  return json::array({rule, text});
}

std::string shape_of(const ParallelPlan& p) {
  std::string s = p.tp > 1 && p.pp > 1 ? "TP + PP" : p.tp > 1 ? "TP" : p.pp > 1 ? "PP" : "DP only";
  if (p.cp > 1) s += " + CP";
  return s;
}

}  // namespace

Chart memory_chart(const MemoryBreakdown& m, const std::string& plan_name) {
  json rows = json::array();
  for (const StageMemory& s : m.stages) {
    const std::pair<const char*, double> parts[] = {
        {"weights", s.weights_bytes},
        {"gradients", s.gradients_bytes},
        {"optimizer state", s.optimizer_bytes},
        {"activations", s.activations_bytes},
        {"transient peaks", s.transient_bytes()},
        {"context, NCCL, fragmentation", s.overhead_bytes()}};
    int order = 0;
    for (const auto& [part, bytes] : parts) {
      rows.push_back(
          {{"stage", s.stage}, {"part", part}, {"order", order++}, {"gib", bytes / kGiB}});
    }
  }
  json bars = {{"data", {{"values", rows}}},
               {"mark", "bar"},
               {"encoding",
                {{"x", axis("stage", "ordinal", "pipeline stage")},
                 {"y",
                  {{"field", "gib"},
                   {"type", "quantitative"},
                   {"stack", "zero"},
                   {"title", "memory per device (GiB)"}}},
                 {"color",
                  {{"field", "part"},
                   {"type", "nominal"},
                   {"title", "part"},
                   {"sort",
                    {"weights", "gradients", "optimizer state", "activations", "transient peaks",
                     "context, NCCL, fragmentation"}}}},
                 {"order", {{"field", "order"}}},
                 {"tooltip", json::array({axis("part", "nominal", "part"),
                                          {{"field", "gib"},
                                           {"type", "quantitative"},
                                           {"format", ".2f"},
                                           {"title", "GiB"}}})}}}};
  json layer = json::array({bars});
  for (json& l : limit_rule("y", m.capacity_bytes / kGiB,
                            fmt::format("capacity {}", format_gib(m.capacity_bytes)))) {
    layer.push_back(l);
  }
  return {fmt::format("Memory per device by pipeline stage: {}", plan_name),
          "Each bar is one device of a pipeline stage, stacked by what it holds; a bar above the "
          "dashed capacity line does not fit.",
          {{"width", std::max<size_t>(240, std::min<size_t>(900, 40 * m.stages.size()))},
           {"height", 280},
           {"layer", layer}}};
}

Chart step_chart(const std::vector<std::pair<std::string, Estimate>>& plans) {
  json rows = json::array();
  for (const auto& [name, e] : plans) {
    const StepTime& t = e.time;
    const CommBreakdown& c = e.comm;
    const std::pair<const char*, double> parts[] = {
        {"compute", t.compute_s - t.recompute_s - t.contention_s},
        {"recompute", t.recompute_s},
        {"compute lost to overlapped comm", t.contention_s},
        {"pipeline bubble", t.bubble_s},
        {"exposed DP comm", c.dp_grads.exposed_s + c.dp_params.exposed_s},
        {"exposed TP comm", c.tp.exposed_s},
        {"exposed PP comm", c.pp.exposed_s},
        {"exposed CP comm", c.cp.exposed_s},
        {"exposed EP comm", c.ep.exposed_s},
        {"optimizer", t.optimizer_s}};
    int order = 0;
    for (const auto& [part, s] : parts) {
      rows.push_back({{"plan", name}, {"part", part}, {"order", order++}, {"s", s}});
    }
  }
  json sort = json::array();
  for (const auto& r : rows) {
    if (std::find(sort.begin(), sort.end(), r["part"]) == sort.end()) sort.push_back(r["part"]);
  }
  return {"Step time breakdown",
          "Where one optimizer step's time goes; the longer a segment, the more there is to gain "
          "by attacking it (exposed communication is what compute does not hide).",
          {{"width", 700},
           {"height", {{"step", 36}}},
           {"data", {{"values", rows}}},
           {"mark", "bar"},
           {"encoding",
            {{"y", {{"field", "plan"}, {"type", "nominal"}, {"title", nullptr}, {"sort", nullptr}}},
             {"x",
              {{"field", "s"},
               {"type", "quantitative"},
               {"stack", "zero"},
               {"title", "time per step (s)"}}},
             {"color",
              {{"field", "part"},
               {"type", "nominal"},
               {"sort", sort},
               {"title", "part"},
               {"legend", {{"labelLimit", 300}}}}},
             {"order", {{"field", "order"}}},
             {"tooltip", json::array({axis("part", "nominal", "part"),
                                      {{"field", "s"},
                                       {"type", "quantitative"},
                                       {"format", ".4f"},
                                       {"title", "seconds"}}})}}}}};
}

Chart ladder_chart(const LadderResult& ladder) {
  json rows = json::array();
  double capacity = 0;
  for (const RungVerdict& v : ladder.rungs) {
    capacity = v.capacity_bytes;
    const double bytes = v.has_plan ? v.memory_bytes : v.need_bytes;
    rows.push_back({{"rung", to_string(v.rung)},
                    {"gib", bytes / kGiB},
                    {"share", v.has_plan && v.fits ? v.comm_share * 100 : 0},
                    {"verdict", v.passes() ? "passes"
                                : v.fits   ? "fits, too much comm"
                                           : "does not fit"},
                    {"blocker", to_string(v.blocker)}});
  }
  json rung_order = json::array();
  for (const auto& r : rows) rung_order.push_back(r["rung"]);
  const json color = {{"field", "verdict"},
                      {"type", "nominal"},
                      {"title", "verdict"},
                      {"scale",
                       {{"domain", {"passes", "fits, too much comm", "does not fit"}},
                        {"range", {"#2ca02c", "#ff7f0e", "#9e9e9e"}}}}};
  auto panel = [&](const char* field, const char* title, double limit, const std::string& label) {
    json bars = {{"mark", "bar"},
                 {"encoding",
                  {{"x",
                    {{"field", "rung"},
                     {"type", "nominal"},
                     {"sort", rung_order},
                     {"title", "ladder rung (walked left to right)"}}},
                   {"y", axis(field, "quantitative", title)},
                   {"color", color},
                   {"tooltip", json::array({axis("blocker", "nominal", "blocker")})}}}};
    json layer = json::array({bars});
    for (json& l : limit_rule("y", limit, label)) layer.push_back(l);
    return json{{"width", 300}, {"height", 240}, {"layer", layer}};
  };
  return {"The decision ladder",
          "Each rung's best plan: memory per device against the capacity (left) and exposed "
          "communication against the share of the step the interconnect may take (right); the "
          "walk stops at the first green rung.",
          {{"data", {{"values", rows}}},
           {"hconcat",
            {panel("gib", "memory per device (GiB)", capacity / kGiB,
                   fmt::format("capacity {}", format_gib(capacity))),
             panel("share", "exposed communication (% of step)", ladder.max_comm_share * 100,
                   fmt::format("limit {}", format_percent(ladder.max_comm_share)))}}}};
}

Chart search_chart(const std::vector<Candidate>& plans, const ParallelPlan* recommended,
                   const ParallelPlan* fastest, double capacity_bytes) {
  auto same = [](const ParallelPlan& a, const ParallelPlan& b) {
    return describe(a) == describe(b);
  };
  json rows = json::array();
  for (const Candidate& c : plans) {
    std::string role;
    if (fastest && same(c.plan, *fastest)) role = "fastest";
    if (recommended && same(c.plan, *recommended))
      role += role.empty() ? "recommended" : " + recommended";
    rows.push_back({{"gib", c.peak_bytes / kGiB},
                    {"step_s", c.step_s},
                    {"zero", fmt::format("ZeRO-{}", c.plan.zero)},
                    {"shape", shape_of(c.plan)},
                    {"plan", describe(c.plan)},
                    {"role", role}});
  }
  const json x = {{"field", "gib"},
                  {"type", "quantitative"},
                  {"title", "memory per device (GiB)"},
                  {"scale", {{"zero", false}}}};
  const json y = {{"field", "step_s"},
                  {"type", "quantitative"},
                  {"title", "step time (s)"},
                  {"scale", {{"zero", false}}}};
  json points = {{"mark", {{"type", "point"}, {"filled", true}, {"opacity", 0.7}}},
                 {"encoding",
                  {{"x", x},
                   {"y", y},
                   {"color", {{"field", "zero"}, {"type", "nominal"}, {"title", "ZeRO"}}},
                   {"shape", {{"field", "shape"}, {"type", "nominal"}, {"title", "TP / PP"}}},
                   {"tooltip", json::array({axis("plan", "nominal", "plan")})}}}};
  const json marked = {{"filter", "datum.role != ''"}};
  json rings = {
      {"transform", {marked}},
      {"mark", {{"type", "point"}, {"size", 260}, {"strokeWidth", 2}, {"color", "black"}}},
      {"encoding", {{"x", x}, {"y", y}}}};
  json labels = {
      {"transform", {marked}},
      {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 10}, {"fontWeight", "bold"}}},
      {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "role"}}}}}};
  json layer = json::array({points, rings, labels});
  for (json& l : limit_rule("x", capacity_bytes / kGiB,
                            fmt::format("capacity {}", format_gib(capacity_bytes)))) {
    layer.push_back(l);
  }
  return {fmt::format("Searched plans ({} fastest that fit)", plans.size()),
          "Each point is a plan that fits: lower is faster, left leaves more memory free; the "
          "ringed points are the ladder's recommended plan and the search's fastest.",
          {{"width", 700}, {"height", 340}, {"data", {{"values", rows}}}, {"layer", layer}}};
}

Chart provision_chart(const ProvisionResult& r, const ProvisionRequest& request) {
  json rows = json::array();
  for (size_t i = 0; i < r.options.size(); ++i) {
    const ProvisionOption& o = r.options[i];
    if (!o.fits) continue;
    rows.push_back({{"days", o.time_to_train_s() / 86400},
                    {"cost", o.cost()},
                    {"gpu", o.gpu},
                    {"gpus", o.gpus},
                    {"pareto", o.pareto},
                    {"label", r.best && *r.best == i ? "" : std::to_string(o.gpus)},
                    {"best_label", fmt::format("best: {} x {}", o.gpus, o.gpu)},
                    {"best", r.best && *r.best == i}});
  }
  const json x = {{"field", "days"},
                  {"type", "quantitative"},
                  {"title", "time to train (days)"},
                  {"scale", {{"type", "log"}, {"nice", false}, {"padding", 20}}}};
  const json y = {{"field", "cost"},
                  {"type", "quantitative"},
                  {"title", "cost (USD)"},
                  {"scale", {{"type", "log"}, {"nice", false}, {"padding", 20}}},
                  {"axis", {{"format", "$.2s"}}}};
  json frontier = {{"transform", {{{"filter", "datum.pareto"}}}},
                   {"mark", {{"type", "line"}, {"color", "black"}, {"strokeDash", {4, 3}}}},
                   {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "days"}}}}}};
  json points = {
      {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
      {"encoding",
       {{"x", x},
        {"y", y},
        {"color", {{"field", "gpu"}, {"type", "nominal"}, {"title", "GPU"}}},
        {"shape", {{"field", "pareto"}, {"type", "nominal"}, {"title", "on the Pareto frontier"}}},
        {"tooltip",
         json::array(
             {axis("gpu", "nominal", "GPU"),
              axis("gpus", "quantitative", "GPUs"),
              {{"field", "days"}, {"type", "quantitative"}, {"format", ".1f"}, {"title", "days"}},
              {{"field", "cost"},
               {"type", "quantitative"},
               {"format", "$,.0f"},
               {"title", "cost"}}})}}}};
  json labels = {{"mark", {{"type", "text"}, {"align", "left"}, {"dx", 7}, {"fontSize", 9}}},
                 {"encoding",
                  {{"x", x},
                   {"y", y},
                   {"text", {{"field", "label"}}},
                   {"color", {{"field", "gpu"}, {"type", "nominal"}}}}}};
  json ring = {
      {"transform", {{{"filter", "datum.best"}}}},
      {"mark", {{"type", "point"}, {"size", 400}, {"strokeWidth", 2.5}, {"color", "black"}}},
      {"encoding", {{"x", x}, {"y", y}}}};
  json best_label = {{"transform", {{{"filter", "datum.best"}}}},
                     {"mark", {{"type", "text"}, {"dy", -18}, {"fontWeight", "bold"}}},
                     {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "best_label"}}}}}};
  json layer = json::array({frontier, points, labels, ring, best_label});
  if (request.deadline_s > 0) {
    for (json& l : limit_rule("x", request.deadline_s / 86400,
                              "deadline " + format_seconds(request.deadline_s))) {
      layer.push_back(l);
    }
  }
  return {"Time to train vs cost",
          "Each point is a GPU type and count running its fastest plan (labels: GPU count); the "
          "dashed black line joins the Pareto frontier, where nothing is both faster and cheaper.",
          {{"width", 760}, {"height", 420}, {"data", {{"values", rows}}}, {"layer", layer}}};
}

}  // namespace shardplan
