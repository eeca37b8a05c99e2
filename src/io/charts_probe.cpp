// Vega-Lite specs for a probe profile's report: bus bandwidth per tier and collective, and GEMM
// throughput (see charts.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/charts.hpp"
#include "shardplan/collectives.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

namespace shardplan {

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

json fitted_rows(const json& profile, const json& measured) {
  json rows = json::array();
  const json& tiers = profile.value("fit", json::object()).value("tiers", json::object());
  for (const json& m : measured) {
    const std::string tier = m.value("tier", "");
    const std::string name = m.value("collective", "");
    if (!tiers.contains(tier) || !tiers[tier]["collectives"].contains(name)) continue;
    const int ranks = tiers[tier].value("ranks", 2);
    const double bf = info(parse_collective(name.c_str(), "collective")).bus_factor(ranks);
    const double size = m.value("size_bytes", 0.0);
    rows.push_back(
        {{"tier", tier},
         {"collective", name},
         {"size_bytes", size},
         {"kind", "fitted"},
         {"gb_per_s", fitted_busbw_gb_per_s(tiers[tier]["collectives"][name], size, bf)}});
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

Chart busbw_chart(const json& profile, const std::string& origin) {
  const json& measured = rows_of(profile, "collectives", origin);
  if (measured.empty()) throw InputError(origin, "the profile has no collective measurements");
  json rows = json::array();
  for (const json& m : measured) {
    rows.push_back({{"tier", m.value("tier", "")},
                    {"collective", m.value("collective", "")},
                    {"size_bytes", m.value("size_bytes", 0.0)},
                    {"kind", "measured"},
                    {"gb_per_s", m.value("busbw_gb_per_s", 0.0)}});
  }
  for (json& f : fitted_rows(profile, measured)) rows.push_back(f);
  for (json& n : nominal_rows(profile, measured)) rows.push_back(n);
  const json x = {{"field", "size_bytes"},
                  {"type", "quantitative"},
                  {"title", "message size S (bytes)"},
                  {"scale", {{"type", "log"}}},
                  {"axis", {{"format", "~s"}}}};
  const json y = {{"field", "gb_per_s"},
                  {"type", "quantitative"},
                  {"title", "bus bandwidth (GB/s)"},
                  {"scale", {{"type", "log"}}}};
  const json color = {{"field", "collective"}, {"type", "nominal"}, {"title", "collective"}};
  json points = {{"transform", {{{"filter", "datum.kind == 'measured'"}}}},
                 {"mark", {{"type", "point"}, {"filled", true}}},
                 {"encoding", {{"x", x}, {"y", y}, {"color", color}}}};
  json curve = {
      {"transform", {{{"filter", "datum.kind == 'fitted'"}}}},
      {"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
      {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"order", {{"field", "size_bytes"}}}}}};
  json layer = json::array({points, curve});
  layer.push_back({{"transform", {{{"filter", "datum.kind == 'nominal'"}}}},
                   {"mark", {{"type", "rule"}, {"color", "#d62728"}, {"strokeDash", {6, 4}}}},
                   {"encoding", {{"y", y}}}});
  layer.push_back(
      {{"transform", {{{"filter", "datum.kind == 'nominal'"}}}},
       {"mark", {{"type", "text"}, {"color", "#d62728"}, {"align", "left"}, {"dy", -6}}},
       {"encoding", {{"y", y}, {"x", {{"value", 0}}}, {"text", {{"field", "label"}}}}}});
  const bool cpu = measured_on_cpu(profile, "intra") || measured_on_cpu(profile, "inter");
  return {cpu ? "Bus bandwidth vs message size (between CPU processes, not GPUs)"
              : "Bus bandwidth vs message size",
          cpu ? "Points are measured (median over iterations), lines are the fitted latency + "
                "size / bandwidth model. The mpi back-end moved CPU memory between processes "
                "(shared memory inside a host, the hosts' network between them): no GPU link "
                "was measured, so no GPU fabric's nominal figure is drawn."
              : "Points are measured (median over iterations), lines are the fitted latency + "
                "size / bandwidth model; the dashed red line is the link's nominal figure where "
                "it has one.",
          {{"data", {{"values", rows}}},
           {"facet", {{"column", {{"field", "tier"}, {"type", "nominal"}, {"title", "tier"}}}}},
           {"spec", {{"width", 300}, {"height", 240}, {"layer", layer}}},
           {"resolve", {{"scale", {{"y", "independent"}}}}}}};
}

Chart gemm_chart(const json& profile, const std::string& origin) {
  const json& measured = rows_of(profile, "gemm", origin);
  if (measured.empty()) throw InputError(origin, "the profile has no GEMM measurements");
  json rows = json::array();
  for (const json& g : measured) {
    rows.push_back(
        {{"flops", g.value("flops", 0.0)},
         {"tflops", g.value("tflop_per_s", 0.0)},
         {"dtype", g.value("dtype", "")},
         {"shape", fmt::format("{}x{}x{}", g.value("m", 0), g.value("n", 0), g.value("k", 0))}});
  }
  const json x = {{"field", "flops"},
                  {"type", "quantitative"},
                  {"title", "GEMM size (FLOPs per call)"},
                  {"scale", {{"type", "log"}}},
                  {"axis", {{"format", "~s"}}}};
  const json y = {{"field", "tflops"}, {"type", "quantitative"}, {"title", "achieved (TFLOP/s)"}};
  json layer =
      json::array({{{"mark", {{"type", "line"}, {"point", true}}},
                    {"encoding",
                     {{"x", x},
                      {"y", y},
                      {"color", {{"field", "dtype"}, {"type", "nominal"}, {"title", "dtype"}}},
                      {"tooltip", json::array({{{"field", "shape"}, {"type", "nominal"}}})}}}}});
  const json gemm_fit = profile.value("fit", json::object()).value("gemm", json::object());
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
  return {fmt::format("GEMM throughput vs size (on the {})",
                      gemm_fit.value("device", std::string("device"))),
          gemm_fit.contains("peak_tflops")
              ? "Achieved throughput per GEMM shape: small GEMMs cannot fill the device, large "
                "ones approach the dashed dense peak; the planner's GEMM efficiency curve is "
                "fitted to these points."
              : "Achieved throughput per GEMM shape, measured on the CPU (the mpi back-end's "
                "BLAS): kept out of the GPU's efficiency curve, so no GPU peak is drawn.",
          {{"width", 600}, {"height", 280}, {"data", {{"values", rows}}}, {"layer", layer}}};
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
