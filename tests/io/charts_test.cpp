// The report charts' specs: what a reader must be able to see is in them (a log memory axis,
// words where a bar is a hairline, only the parts a plan has, hues far apart, limit labels that
// no mark can cover, offload drawn).
#include "shardplan/charts.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "../../src/io/chart_parts.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"
#include "support.hpp"

using namespace shardplan;
using nlohmann::json;

namespace {

// CIE L*a*b* of an sRGB colour "#rrggbb" (IEC 61966-2-1 transfer, D65 white).
std::array<double, 3> lab(const std::string& hex) {
  double rgb[3];
  for (int i = 0; i < 3; ++i) {
    const double c = std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16) / 255.0;
    rgb[i] = c > 0.04045 ? std::pow((c + 0.055) / 1.055, 2.4) : c / 12.92;
  }
  const double xyz[3] = {(0.4124 * rgb[0] + 0.3576 * rgb[1] + 0.1805 * rgb[2]) / 0.95047,
                         0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2],
                         (0.0193 * rgb[0] + 0.1192 * rgb[1] + 0.9505 * rgb[2]) / 1.08883};
  double f[3];
  for (int i = 0; i < 3; ++i)
    f[i] = xyz[i] > 0.008856 ? std::cbrt(xyz[i]) : 7.787 * xyz[i] + 16.0 / 116;
  return {116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])};
}

// CIE94 colour difference (graphic arts weights): chroma and hue differences count less where
// colours are saturated, as the eye sees them.
double delta_e94(const std::string& a, const std::string& b) {
  const auto p = lab(a);
  const auto q = lab(b);
  const double c1 = std::hypot(p[1], p[2]);
  const double c2 = std::hypot(q[1], q[2]);
  const double dc = c1 - c2;
  const double dh2 = std::max(0.0, std::pow(p[1] - q[1], 2) + std::pow(p[2] - q[2], 2) - dc * dc);
  return std::sqrt(std::pow(p[0] - q[0], 2) + std::pow(dc / (1 + 0.045 * c1), 2) +
                   dh2 / std::pow(1 + 0.015 * c1, 2));
}

double min_difference(const std::vector<std::string>& colors) {
  double least = 1e9;
  for (size_t i = 0; i < colors.size(); ++i)
    for (size_t j = i + 1; j < colors.size(); ++j)
      least = std::min(least, delta_e94(colors[i], colors[j]));
  return least;
}

// Every layer of a spec, nested layers and concatenations included.
void layers_of(const json& spec, std::vector<json>& out) {
  for (const char* key : {"layer", "hconcat", "vconcat"}) {
    if (!spec.contains(key)) continue;
    for (const json& child : spec[key]) {
      out.push_back(child);
      layers_of(child, out);
    }
  }
}
std::vector<json> layers_of(const json& spec) {
  std::vector<json> out;
  layers_of(spec, out);
  return out;
}

bool is_text(const json& layer) {
  return layer.contains("mark") && layer["mark"].is_object() && layer["mark"]["type"] == "text";
}

RungVerdict rung(Rung r, bool fits, double gib, double share) {
  RungVerdict v;
  v.rung = r;
  v.fits = fits;
  v.comm_ok = fits;
  v.has_plan = fits;
  v.need_bytes = fits ? 0 : gib * kGiB;
  v.memory_bytes = fits ? gib * kGiB : 0;
  v.capacity_bytes = 79.65 * kGiB;
  v.comm_share = share;
  return v;
}

}  // namespace

TEST_CASE("the palette's colours are far apart, where Tableau 10's pinks and greys are not") {
  const auto& palette = charts::categorical_palette();
  REQUIRE(palette.size() >= 10);  // profiles/gpus holds 10 GPUs
  CHECK(min_difference(palette) >= 20);
  // The control: vega-lite's default scheme (Tableau 10) has pairs within 14 (#ff9da6 pink and
  // #bab0ac grey), which is what made B200, MI300X and L40S hard to tell apart.
  CHECK(min_difference({"#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2",
                        "#ff9da6", "#9d755d", "#bab0ac"}) < 14);
  for (const std::string& c : palette) CHECK(delta_e94(c, charts::kLimitColor) >= 15);
}

TEST_CASE("limit labels sit above the plot, where no bar or point can cover them") {
  for (const char* channel : {"x", "y"}) {
    CAPTURE(channel);
    const auto layers = charts::limit_rule(channel, 79.65, "capacity 79.65 GiB");
    REQUIRE(layers.size() == 2);
    const json& text = layers[1];
    CHECK(text["encoding"]["y"]["value"] == 0);  // the plot's top edge
    CHECK(text["mark"]["baseline"] == "bottom");
    CHECK(text["mark"]["dy"].get<int>() < 0);
  }
}

TEST_CASE(
    "the ladder: a log memory axis, words for a hairline share and a rung that does not fit") {
  LadderResult l;
  l.rungs = {rung(Rung::single_gpu, false, 1128.57, 0), rung(Rung::zero_3, true, 60.43, 0.001)};
  l.stop = 1;
  l.max_comm_share = 0.5;
  const json spec = ladder_chart(l).spec;
  REQUIRE(spec["hconcat"].size() == 2);
  const json& memory_x = spec["hconcat"][0]["layer"][0]["encoding"]["x"];
  CHECK(memory_x["scale"]["type"] == "log");
  // 60 GiB and 1,129 GiB both inside the domain, with the capacity.
  CHECK(memory_x["scale"]["domain"][0].get<double>() <= 60.43);
  CHECK(memory_x["scale"]["domain"][1].get<double>() >= 1128.57);
  const json& rows = spec["data"]["values"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["share_label"] == "- (does not fit)");
  CHECK(rows[1]["share_label"] == "0.1%");
  CHECK(test::contains(rows[1]["gib_label"], "60.43 GiB"));
  CHECK(test::contains(rows[1]["gib_label"], "stops here"));
  for (const json& panel : spec["hconcat"]) {
    const auto layers = layers_of(panel);
    CHECK(std::count_if(layers.begin(), layers.end(), is_text) == 2);  // bar words + limit
  }
}

TEST_CASE("the step chart lists only the parts the plan has, offload among them") {
  Estimate e;
  e.time.compute_s = 10;
  e.time.recompute_s = 2;
  e.time.offload_s = 1.5;
  e.time.optimizer_s = 0.5;
  e.time.step_s = 12;
  const json spec = step_chart({{"this plan", e}}).spec;
  const json& color = spec["layer"][0]["encoding"]["color"];
  const json want = {"compute", "recompute", "offload (PCIe, CPU Adam, NVMe)", "optimizer"};
  CHECK(color["scale"]["domain"] == want);
  CHECK(color["scale"]["range"].size() == 4);
  double sum = 0;
  for (const json& r : spec["layer"][0]["data"]["values"]) sum += r["value"].get<double>();
  CHECK(sum == doctest::Approx(12));  // 8 + 2 + 1.5 + 0.5: the parts add up to the step
}

TEST_CASE("the step chart's label names the simulated step beside the closed form's bars") {
  Estimate e;
  e.time.compute_s = 10;
  e.time.step_s = 10;
  e.throughput.mfu = 0.4;
  const auto label = [](const Estimate& x) {
    const json spec = step_chart({{"this plan", x}}).spec;
    return spec["layer"][1]["data"]["values"][0]["label"].get<std::string>();
  };
  CHECK(label(e) == "10.00 s, MFU 40%");  // no simulation: the closed form is the step
  e.step_simulated = true;
  e.step_s = 12.5;  // the MFU was taken from this step
  CHECK(label(e) == "10.00 s closed form; simulated 12.50 s, MFU 40%");
}

TEST_CASE("the communication chart: hidden and exposed per collective, the link named") {
  ClusterOptions o;
  o.gpu = "H100-SXM";
  o.gpus = 64;
  const ClusterSpec c = build_cluster(o);
  Estimate e;
  e.comm.tp.collective = Collective::all_reduce;
  e.comm.tp.bytes = 134.2e6;
  e.comm.tp.calls = 25600;
  e.comm.tp.placement = {8, 8};
  e.comm.tp.time_s = 8;
  e.comm.tp.exposed_s = 3;
  e.comm.dp_grads.collective = Collective::reduce_scatter;
  e.comm.dp_grads.bytes = 4.5e9;
  e.comm.dp_grads.calls = 1;
  e.comm.dp_grads.placement = {8, 1};
  e.comm.dp_grads.time_s = 0.05;
  e.comm.dp_grads.exposed_s = 0.2;  // more than its time: the chart shows at most the time
  const json spec = comm_chart(e, c).spec;
  const json& rows = spec["layer"][0]["data"]["values"];
  REQUIRE(rows.size() == 4);  // exposed + hidden, for 2 collectives
  CHECK(rows[0]["what"] == "DP gradients (reduce scatter)");
  CHECK(rows[0]["s"].get<double>() == doctest::Approx(0.05));
  CHECK(rows[1]["s"].get<double>() == doctest::Approx(0));
  CHECK(rows[2]["s"].get<double>() == doctest::Approx(3));
  CHECK(rows[3]["s"].get<double>() == doctest::Approx(5));
  const json& words = spec["layer"][1]["data"]["values"];
  REQUIRE(words.size() == 2);
  CHECK(test::contains(words[1]["label"][1], c.intra.name + ", inside one scale-up domain"));
  CHECK(test::contains(words[0]["label"][1], "across 8 scale-up domains"));
}

TEST_CASE("memory with offload: what host memory holds stands on the device's bar, hollow") {
  MemoryBreakdown m;
  m.capacity_bytes = 79.65 * kGiB;
  StageMemory s;
  s.weights_bytes = 16 * kGiB;
  s.activations_bytes = 30 * kGiB;
  s.offloaded_bytes = 90 * kGiB;
  m.stages = {s};
  const json spec = memory_chart(m, "offload").spec;
  bool hollow = false;
  for (const json& l : layers_of(spec)) {
    if (l.contains("encoding") && l["encoding"].contains("y2") &&
        l["encoding"]["y2"]["field"] == "top")
      hollow = l["mark"]["fill"] == "#ffffff";
  }
  CHECK(hollow);
  CHECK(spec["layer"][0]["encoding"]["color"]["scale"]["domain"] ==
        json({"weights", "activations"}));
}

TEST_CASE("the training run in days and dollars adds up to the run") {
  Estimate e;
  e.time.compute_s = 30;
  e.time.bubble_s = 4;
  e.time.step_s = 34;
  e.train_s = 340 * 86400.0;  // 340 days
  e.train_cost = 1.7e6;
  e.train_gpu_hours = 522240;
  const json spec = training_chart(e).spec;
  REQUIRE(spec["vconcat"].size() == 2);
  double days = 0;
  double usd = 0;
  for (const json& r : spec["vconcat"][0]["layer"][0]["data"]["values"])
    days += r["value"].get<double>();
  for (const json& r : spec["vconcat"][1]["layer"][0]["data"]["values"])
    usd += r["value"].get<double>();
  CHECK(days == doctest::Approx(340));
  CHECK(usd == doctest::Approx(1.7e6));
}

TEST_CASE("provision: GPUs in the far-apart palette, labels kept off the frontier and edge") {
  ProvisionResult r;
  const char* gpus[] = {"B200", "MI300X", "L40S", "H100-SXM"};
  for (int i = 0; i < 4; ++i) {
    ProvisionOption o;
    o.gpu = gpus[i];
    o.gpus = 8 << i;
    o.fits = true;
    o.pareto = true;
    o.estimate.train_s = (100.0 / (i + 1)) * 86400;
    o.estimate.train_cost = 1e5 * (i + 1);
    r.options.push_back(o);
  }
  r.best = 0;
  ProvisionRequest rq;
  rq.deadline_s = 120 * 86400.0;
  const json spec = provision_chart(r, rq).spec;
  const json color = spec["layer"][1]["encoding"]["color"];
  std::vector<std::string> range = color["scale"]["range"];
  REQUIRE(range.size() == 4);
  CHECK(min_difference(range) >= 20);
  CHECK(spec["layer"][1]["encoding"]["shape"]["field"] == "gpu");  // shape too, not only hue
  std::set<std::string> aligns;
  for (const json& l : spec["layer"]) {
    // The GPU-count labels (the deadline's label brings its own data).
    if (is_text(l) && !l.contains("data") && l["encoding"]["text"]["field"] == "label")
      aligns.insert(l["mark"]["align"]);
  }
  CHECK(aligns == std::set<std::string>{"left", "right"});
  // Points right of the middle are labelled leftwards: the 100-day option, not the 25-day one.
  for (const json& row : spec["data"]["values"])
    CHECK(row["right"].get<bool>() == (row["days"].get<double>() > 50));
}
