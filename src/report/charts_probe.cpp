// Vega-Lite specs for a probe profile's report: bus bandwidth per tier and collective, and GEMM
// throughput (see charts.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "chart_parts.hpp"
#include "shardplan/charts.hpp"
#include "shardplan/collectives.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

namespace shardplan {

using charts::axis;
using nlohmann::json;

namespace {

const json& rows_of(const json& profile, const char* kind, const std::string& origin) {
  if (!profile.contains("measurements") || !profile["measurements"].contains(kind) ||
      !profile["measurements"][kind].is_array()) {
    throw InputError(origin, fmt::format("not a probe profile: no measurements.{} (write one "
                                         "with `shardplan probe`)",
                                         kind));
  }
  return profile["measurements"][kind];
}

// The fit's own model, t = latency + S x bus factor / busbw, as the bus bandwidth it implies
// at size S: S x bus factor / t (nccl-tests PERFORMANCE.md's busbw).
double fitted_busbw_gb_per_s(const json& fit, double size_bytes, double bus_factor) {
  const double latency_s = fit.value("latency_us", 0.0) * 1e-6;
  const double busbw = fit.value("busbw_gb_per_s", 0.0) * 1e9;
  if (!(busbw > 0)) return 0;
  const double t = latency_s + size_bytes * bus_factor / busbw;
  return size_bytes * bus_factor / t / 1e9;
}

// The fit of collective `name` on `tier` in the profile's fit.tiers, or null where the probe
// fitted none.
const json* fit_of(const json& tiers, const std::string& tier, const std::string& name) {
  const auto t = tiers.find(tier);
  if (t == tiers.end() || !t->is_object()) return nullptr;
  const auto c = t->find("collectives");
  if (c == t->end() || !c->is_object()) return nullptr;
  const auto f = c->find(name);
  return f == c->end() ? nullptr : &*f;
}

json fitted_rows(const json& tiers, const json& measured) {
  json rows = json::array();
  for (const json& m : measured) {
    const std::string tier = m.value("tier", "");
    const std::string name = m.value("collective", "");
    const json* fit = fit_of(tiers, tier, name);
    if (!fit) continue;
    const int ranks = tiers[tier].value("ranks", 2);
    const double bf = info(parse_collective(name.c_str(), "collective")).bus_factor(ranks);
    const double size = m.value("size_bytes", 0.0);
    rows.push_back({{"tier", tier},
                    {"collective", name},
                    {"size_bytes", size},
                    {"kind", "fitted"},
                    {"gb_per_s", fitted_busbw_gb_per_s(*fit, size, bf)}});
  }
  return rows;
}

// Whether the profile's link for `tier` was measured between CPU processes ("medium"): then the
// GPU fabric's datasheet figure describes another link, and is not drawn against it.
bool measured_on_cpu(const json& profile, const char* tier) {
  return profile.contains(tier) && profile[tier].is_object() && profile[tier].contains("medium");
}

// The nominal (datasheet) figure of each measured tier's link: a measured link's profile entry
// holds what was measured, so the nominal one is the GPU's own fabric preset (intra_link,
// inter_link); world spans both links and has none.
json nominal_rows(const json& profile, const json& measured) {
  json rows = json::array();
  const json gpu = profile.value("gpu", json::object());
  for (const char* tier : {"intra", "inter"}) {
    const bool measured_tier = std::any_of(measured.begin(), measured.end(), [&](const json& m) {
      return m.value("tier", "") == tier;
    });
    if (measured_on_cpu(profile, tier)) continue;
    const std::string preset = gpu.is_object() ? gpu.value(std::string(tier) + "_link", "") : "";
    if (!measured_tier || preset.empty()) continue;
    const LinkSpec link = load_link(preset, "gpu." + std::string(tier) + "_link");
    rows.push_back(
        {{"tier", tier},
         {"kind", "nominal"},
         {"gb_per_s", link.bytes_per_s / 1e9},
         {"label", fmt::format("nominal {} {:.0f} GB/s", link.name, link.bytes_per_s / 1e9)}});
  }
  return rows;
}

}  // namespace

namespace {

constexpr double kProbeWidth = 740;
constexpr double kBusbwHeight = 300;

// What the legend says of a collective's fit: its bandwidth and latency, and "rough" where its
// times miss the straight line by more than a quarter (kResidualWarning in probe/fit.hpp).
std::string fit_words(const json& fit) {
  std::string words = fmt::format(": {:.3g} GB/s, {:.3g} us", fit.value("busbw_gb_per_s", 0.0),
                                  fit.value("latency_us", 0.0));
  const double residual = fit.value("residual", 0.0);
  if (residual > 0.25) words += fmt::format(" (rough: misses by {:.0f}%)", residual * 100);
  return words;
}

const char* tier_words(const std::string& tier) {
  return tier == "intra"   ? "inside a node"
         : tier == "inter" ? "between nodes"
         : tier == "world" ? "all ranks"
                           : "";
}

}  // namespace

Chart busbw_chart(const json& profile, const std::string& origin) {
  const json& measured = rows_of(profile, "collectives", origin);
  if (measured.empty()) throw InputError(origin, "the profile has no collective measurements");
  const json& tiers = profile.value("fit", json::object()).value("tiers", json::object());
  // Each series is named with its fit's figures, so the legend reads the line it colours.
  auto series_of = [&](const std::string& tier, const std::string& name) {
    const json* fit = fit_of(tiers, tier, name);
    return fit ? name + fit_words(*fit) : name;
  };
  auto in_window = [&](const std::string& tier, const std::string& name, double size) {
    const json* fit = fit_of(tiers, tier, name);
    return fit && fit->contains("slope_from_bytes") &&
           size >= (*fit)["slope_from_bytes"].get<double>();
  };
  std::vector<std::string> tier_order;
  json rows = json::array();
  for (const json& m : measured) {
    const std::string tier = m.value("tier", "");
    const std::string name = m.value("collective", "");
    if (std::find(tier_order.begin(), tier_order.end(), tier) == tier_order.end())
      tier_order.push_back(tier);
    const double size = m.value("size_bytes", 0.0);
    rows.push_back({{"tier", tier},
                    {"series", series_of(tier, name)},
                    {"size_bytes", size},
                    {"kind", in_window(tier, name, size) ? "measured, fitted on" : "measured"},
                    {"gb_per_s", m.value("busbw_gb_per_s", 0.0)}});
  }
  for (json& f : fitted_rows(tiers, measured)) {
    f["series"] = series_of(f["tier"], f["collective"]);
    rows.push_back(f);
  }
  for (json& n : nominal_rows(profile, measured)) rows.push_back(n);
  // Both axes logarithmic with their ticks at 1-2-5 steps (Vega's own log ticks draw a grid line
  // at every integer multiple and leave most unlabelled).
  std::vector<double> sizes;
  std::vector<double> rates;
  for (const json& r : rows) {
    if (r.contains("size_bytes")) sizes.push_back(r["size_bytes"].get<double>());
    if (r["gb_per_s"].get<double>() > 0) rates.push_back(r["gb_per_s"].get<double>());
  }
  const charts::PixelScale sx = charts::fit_scale(sizes, kProbeWidth, true, false, 0.02);
  const charts::PixelScale sy = charts::fit_scale(rates, kBusbwHeight, true, true, 0.04);
  json x_axis = charts::ticks(sx, 36, "s");
  x_axis["format"] = "~s";  // bytes: 1k, 10k, 1M
  const json x = charts::position("size_bytes", "message size S (bytes)", sx, x_axis);
  const json y =
      charts::position("gb_per_s", "bus bandwidth (GB/s)", sy, charts::ticks(sy, 20, "r"));
  const json color = {
      {"field", "series"},
      {"type", "nominal"},
      {"title", "collective: fitted busbw, latency"},
      {"legend", {{"labelLimit", 420}, {"titleLimit", 420}, {"orient", "bottom"}, {"columns", 1}}}};
  // The sizes the bandwidth was fitted on are filled; the smaller ones, which only set the
  // latency, are rings.
  auto points = [&](bool fitted_on) {
    return json{
        {"transform",
         {{{"filter",
            fitted_on ? "datum.kind == 'measured, fitted on'" : "datum.kind == 'measured'"}}}},
        {"mark", {{"type", "point"}, {"filled", fitted_on}, {"size", 40}, {"strokeWidth", 1.5}}},
        {"encoding",
         {{"x", x},
          {"y", y},
          {"color", color},
          {"tooltip", json::array({axis("series", "nominal", "collective"),
                                   axis("size_bytes", "quantitative", "bytes"),
                                   axis("gb_per_s", "quantitative", "GB/s")})}}}};
  };
  json curve = {
      {"transform", {{{"filter", "datum.kind == 'fitted'"}}}},
      {"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
      {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"order", {{"field", "size_bytes"}}}}}};
  json layer = json::array({curve, points(false), points(true)});
  layer.push_back({{"transform", {{{"filter", "datum.kind == 'nominal'"}}}},
                   {"mark", {{"type", "rule"}, {"color", "#d62728"}, {"strokeDash", {6, 4}}}},
                   {"encoding", {{"y", y}}}});
  layer.push_back(
      {{"transform", {{{"filter", "datum.kind == 'nominal'"}}}},
       {"mark", {{"type", "text"}, {"color", "#d62728"}, {"align", "left"}, {"dy", -6}}},
       {"encoding", {{"y", y}, {"x", {{"value", 0}}}, {"text", {{"field", "label"}}}}}});
  // One wide panel per tier, titled in words; the tiers stack.
  json panels = json::array();
  for (const std::string& tier : tier_order) {
    const int ranks = tiers.contains(tier) ? tiers[tier].value("ranks", 0) : 0;
    panels.push_back(
        {{"title",
          ranks > 0 ? fmt::format("{} ({}, {} ranks)", tier, tier_words(tier), ranks) : tier},
         {"transform", {{{"filter", fmt::format("datum.tier == '{}'", tier)}}}},
         {"width", kProbeWidth},
         {"height", kBusbwHeight},
         {"layer", layer}});
  }
  const bool cpu = measured_on_cpu(profile, "intra") || measured_on_cpu(profile, "inter");
  const std::string how =
      "Points are measured (median over iterations): filled ones are the sizes the bandwidth "
      "was fitted on (the largest, where nccl-tests reads busbw), rings the smaller sizes, "
      "which set only the latency. Lines are the fitted latency + size / bandwidth model, its "
      "figures in the legend; a fit whose times miss the line by more than a quarter says "
      "\"rough\".";
  return {cpu ? "Bus bandwidth vs message size (between CPU processes, not GPUs)"
              : "Bus bandwidth vs message size",
          how + (cpu ? " The mpi back-end moved CPU memory between processes (shared memory "
                       "inside a host, the hosts' network between them): no GPU link was "
                       "measured, so no GPU fabric's nominal figure is drawn."
                     : " The dashed red line is the link's nominal figure where it has one."),
          {{"data", {{"values", rows}}}, {"vconcat", panels}}};
}

Chart gemm_chart(const json& profile, const std::string& origin) {
  const json& measured = rows_of(profile, "gemm", origin);
  if (measured.empty()) throw InputError(origin, "the profile has no GEMM measurements");
  const json gemm_fit = profile.value("fit", json::object()).value("gemm", json::object());
  json rows = json::array();
  for (const json& g : measured) {
    rows.push_back(
        {{"kind", "measured"},
         {"flops", g.value("flops", 0.0)},
         {"tflops", g.value("tflop_per_s", 0.0)},
         {"dtype", g.value("dtype", "")},
         {"shape", fmt::format("{}x{}x{}", g.value("m", 0), g.value("n", 0), g.value("k", 0))}});
  }
  // The planner's curve, where the probe fitted one: efficiency x peak at each size, the one line
  // drawn (measured shapes are separate GEMMs, so no line joins them).
  const bool has_curve = gemm_fit.contains("peak_tflops") && gemm_fit.contains("curve");
  if (has_curve) {
    const double peak = gemm_fit["peak_tflops"].get<double>();
    for (const json& p : gemm_fit["curve"]) {
      rows.push_back({{"kind", "curve"},
                      {"flops", p.at(0).get<double>()},
                      {"tflops", p.at(1).get<double>() * peak}});
    }
  }
  const json x = {{"field", "flops"},
                  {"type", "quantitative"},
                  {"title", "GEMM size (FLOPs per call)"},
                  {"scale", {{"type", "log"}}},
                  {"axis", {{"format", "~s"}}}};
  const json y = {{"field", "tflops"}, {"type", "quantitative"}, {"title", "achieved (TFLOP/s)"}};
  json layer =
      json::array({{{"transform", {{{"filter", "datum.kind == 'measured'"}}}},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                    {"encoding",
                     {{"x", x},
                      {"y", y},
                      {"color", {{"field", "dtype"}, {"type", "nominal"}, {"title", "dtype"}}},
                      {"shape", {{"field", "dtype"}, {"type", "nominal"}, {"title", "dtype"}}},
                      {"tooltip", json::array({axis("shape", "nominal", "m x n x k"),
                                               axis("dtype", "nominal", "dtype"),
                                               axis("tflops", "quantitative", "TFLOP/s")})}}}}});
  if (has_curve) {
    layer.push_back({{"transform", {{{"filter", "datum.kind == 'curve'"}}}},
                     {"mark", {{"type", "line"}, {"color", "#555555"}, {"strokeWidth", 1.5}}},
                     {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "flops"}}}}}});
  }
  if (gemm_fit.contains("peak_tflops")) {
    const double peak = gemm_fit["peak_tflops"].get<double>();
    const json data = {
        {"values", json::array({{{"v", peak},
                                 {"label", fmt::format("dense peak {:.0f} TFLOP/s ({})", peak,
                                                       gemm_fit.value("dtype", ""))}}})}};
    layer.push_back({{"data", data},
                     {"mark", {{"type", "rule"}, {"color", "#d62728"}, {"strokeDash", {6, 4}}}},
                     {"encoding", {{"y", {{"field", "v"}, {"type", "quantitative"}}}}}});
    layer.push_back(
        {{"data", data},
         {"mark", {{"type", "text"}, {"color", "#d62728"}, {"align", "left"}, {"dy", -6}}},
         {"encoding",
          {{"y", {{"field", "v"}, {"type", "quantitative"}}},
           {"x", {{"value", 0}}},
           {"text", {{"field", "label"}}}}}});
  }
  return {
      fmt::format("GEMM throughput vs size (on the {})",
                  gemm_fit.value("device", std::string("device"))),
      gemm_fit.contains("peak_tflops")
          ? fmt::format(
                "Each point is one GEMM shape (m x n x k in its tooltip) at one dtype: small "
                "GEMMs cannot fill the device, large ones approach the dashed dense peak. The "
                "grey line is the planner's GEMM efficiency curve fitted to these points, as "
                "a training step prices it: {:.2f} of an isolated GEMM's speed.",
                gemm_fit.value("in_step_share", 1.0))
          : "Each point is one GEMM shape (m x n x k in its tooltip) at one dtype, measured on "
            "the CPU (the mpi back-end's BLAS): kept out of the GPU's efficiency curve, so no "
            "GPU peak or curve is drawn; no line joins the shapes, which are separate GEMMs.",
      {{"width", kProbeWidth}, {"height", 300}, {"data", {{"values", rows}}}, {"layer", layer}}};
}

namespace {

// One bar per host-memory measurement: STREAM as the node's rate (its ranks at once), the
// pinned copies as one GPU's while every GPU of the node copies.
json host_rows(const json& measured) {
  json rows = json::array();
  for (const json& h : measured) {
    const std::string move = h.value("move", "");
    const bool stream = move.rfind("stream_", 0) == 0;
    const char* what = move == "stream_copy"    ? "STREAM Copy"
                       : move == "stream_triad" ? "STREAM Triad"
                       : move == "h2d"          ? "host to GPU copy"
                       : move == "d2h"          ? "GPU to host copy"
                                                : "host move";
    const double bytes = h.value("size_bytes", 0.0);
    const double gb_per_s = h.value(stream ? "node_gb_per_s" : "rank_gb_per_s", 0.0);
    rows.push_back(
        {{"move", fmt::format("{}, {:.0f} MiB {} ({})", what, bytes / (1 << 20),
                              stream ? "arrays" : "buffer", stream ? "per node" : "per GPU")},
         {"kind", stream ? "CPU memory (STREAM)" : "host link (pinned copies)"},
         {"gb_per_s", gb_per_s},
         {"label", fmt::format("{:.1f} GB/s", gb_per_s)}});
  }
  return rows;
}

}  // namespace

Chart host_chart(const json& profile, const std::string& origin) {
  const json& measured = rows_of(profile, "host", origin);
  if (measured.empty()) throw InputError(origin, "the profile has no host-memory measurements");
  const json y = {{"field", "move"},
                  {"type", "nominal"},
                  {"title", nullptr},
                  {"sort", nullptr},
                  {"axis", {{"labelLimit", 400}}}};
  const json x = {{"field", "gb_per_s"}, {"type", "quantitative"}, {"title", "GB/s"}};
  const json color = {{"field", "kind"},
                      {"type", "nominal"},
                      {"title", nullptr},
                      {"legend", {{"orient", "bottom"}}}};
  json bars = {{"mark", {{"type", "bar"}}}, {"encoding", {{"x", x}, {"y", y}, {"color", color}}}};
  json labels = {{"mark", {{"type", "text"}, {"align", "left"}, {"dx", 4}}},
                 {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "label"}}}}}};
  return {"Host memory bandwidth (measured)",
          "STREAM Copy and Triad (McCalpin's kernels, arrays 4x the last-level cache) on every "
          "rank of a node at once: the node's CPU memory bandwidth, which prices CPU Adam "
          "under optimizer offload (Triad). Pinned host/GPU copies, where a GPU was probed, "
          "are one GPU's share of its host link while all copy.",
          {{"width", 520},
           {"height", {{"step", 28}}},
           {"data", {{"values", host_rows(measured)}}},
           {"layer", json::array({bars, labels})}}};
}

}  // namespace shardplan
