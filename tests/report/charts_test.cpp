// The report charts' specs: what a reader must be able to see is in them (a log memory axis,
// words where a bar is a hairline, only the parts a plan has, hues far apart, limit labels that
// no mark can cover, offload drawn).
#include "shardplan/charts.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "../../src/report/chart_parts.hpp"
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

namespace {

ProvisionOption option(const char* gpu, int gpus, double days, double cost, bool pareto) {
  ProvisionOption o;
  o.gpu = gpu;
  o.gpus = gpus;
  o.fits = true;
  o.pareto = pareto;
  o.estimate.train_s = days * 86400;
  o.estimate.train_cost = cost;
  return o;
}

// A spec's scale on `channel` of its first layer, as chart_layout reads it.
charts::PixelScale scale_of(const json& spec, const char* channel, double pixels) {
  const json& s = spec["layer"][1]["encoding"][channel]["scale"];
  return {.lo = s["domain"][0].get<double>(),
          .hi = s["domain"][1].get<double>(),
          .pixels = pixels,
          .log = s["type"] == "log",
          .down = std::string(channel) == "y"};
}

// The GPU -> (colour, shape) a provision chart draws.
std::map<std::string, std::pair<std::string, std::string>> looks(const json& spec) {
  const json& enc = spec["layer"][1]["encoding"];
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < enc["color"]["scale"]["domain"].size(); ++i) {
    out[enc["color"]["scale"]["domain"][i]] = {enc["color"]["scale"]["range"][i],
                                               enc["shape"]["scale"]["range"][i]};
  }
  return out;
}

}  // namespace

TEST_CASE("provision: labels sit where nothing else is, off the points, frontier and deadline") {
  // Eight options crowded along a frontier that crosses the deadline, as in a 4 x 4 grid where
  // the counts of one GPU line up: the labels must not touch a point, the frontier, the deadline
  // line or each other, and must stay inside the plot.
  ProvisionResult r;
  const char* gpus[] = {"B200", "H100-SXM"};
  for (int g = 0; g < 2; ++g) {
    for (int k = 0; k < 4; ++k) {
      r.options.push_back(option(gpus[g], 64 << k, 120.0 / (1 << k) * (g + 1),
                                 1.2e6 * (1 + 0.03 * k) * (1 + 0.05 * g), g == 0));
    }
  }
  r.best = 1;
  ProvisionRequest rq;
  rq.deadline_s = 40 * 86400.0;
  const json spec = provision_chart(r, rq).spec;
  const double w = spec["width"];
  const double h = spec["height"];
  const charts::PixelScale sx = scale_of(spec, "x", w);
  const charts::PixelScale sy = scale_of(spec, "y", h);
  std::vector<charts::Box> labels;
  std::vector<charts::Box> marks;
  std::vector<std::pair<double, double>> frontier;
  for (const json& row : spec["data"]["values"]) {
    const double px = sx.to_px(row["days"].get<double>());
    const double py = sy.to_px(row["cost"].get<double>());
    marks.push_back(charts::point_box(px, py, row["best"].get<bool>() ? 420 : 80));
    if (row["pareto"].get<bool>()) frontier.emplace_back(px, py);
    const bool best = row["best"].get<bool>();
    const double tw = charts::text_width(row["label"], best ? 12 : 10, best);
    const double th = (best ? 12 : 10) * 1.2;
    const double cx = sx.to_px(row["label_days"].get<double>());
    const double cy = sy.to_px(row["label_cost"].get<double>());
    labels.push_back({cx - tw / 2, cy - th / 2, cx + tw / 2, cy + th / 2});
  }
  REQUIRE(labels.size() == 8);
  std::sort(frontier.begin(), frontier.end());
  for (size_t k = 1; k < frontier.size(); ++k) {
    for (const charts::Box& b : charts::segment_boxes(frontier[k - 1].first, frontier[k - 1].second,
                                                      frontier[k].first, frontier[k].second))
      marks.push_back(b);
  }
  const double deadline_px = sx.to_px(40);
  marks.push_back({deadline_px - 1, 0, deadline_px + 1, h});
  for (size_t i = 0; i < labels.size(); ++i) {
    CAPTURE(i);
    CHECK(labels[i].x0 >= 0);
    CHECK(labels[i].x1 <= w);
    CHECK(labels[i].y0 >= 0);
    CHECK(labels[i].y1 <= h);
    for (const charts::Box& m : marks) CHECK(labels[i].overlap(m) == 0);
    for (size_t j = i + 1; j < labels.size(); ++j) CHECK(labels[i].overlap(labels[j]) == 0);
  }
}

TEST_CASE("provision: a GPU keeps its colour and shape from page to page, and no two look alike") {
  ProvisionRequest rq;
  ProvisionResult a;
  a.options = {option("H100-SXM", 64, 50, 1e6, true), option("B200", 64, 30, 9e5, true)};
  ProvisionResult b;
  for (const char* gpu : {"B200", "MI300X", "H200", "A100-80GB", "L40S", "GB200", "MI355X"})
    b.options.push_back(option(gpu, 64, 40, 1e6, false));
  const auto la = looks(provision_chart(a, rq).spec);
  const auto lb = looks(provision_chart(b, rq).spec);
  CHECK(la.at("B200") == lb.at("B200"));  // sorted first on one page, second on the other
  REQUIRE(lb.size() == 7);
  // (Named copies, not structured bindings: clang's CAPTURE lambda cannot capture a binding.)
  for (const auto& first : lb) {
    for (const auto& second : lb) {
      if (first.first >= second.first) continue;
      const std::string pair = first.first + " / " + second.first;
      CAPTURE(pair);
      const auto& look = first.second;
      const auto& other = second.second;
      // Told apart by hue, or else by shape.
      CHECK((delta_e94(look.first, other.first) >= 20 || look.second != other.second));
    }
  }
  // The commonly compared pairs differ in hue, not only in shape (a look is the same on every
  // page, so the two pages' looks can be merged).
  auto all = lb;
  all.insert(la.begin(), la.end());
  for (const auto& pair : {std::pair<std::string, std::string>{"B200", "MI300X"},
                           {"H100-SXM", "H200"},
                           {"GB200", "MI355X"}}) {
    const std::string g = pair.first;
    CAPTURE(g);
    CHECK(delta_e94(all.at(g).first, all.at(pair.second).first) >= 20);
  }
}

TEST_CASE("log axes are labelled to their end, every label differs from its neighbours") {
  // 16 to 1,000 days: the old axis stopped labelling at 500 days.
  const charts::PixelScale days{.lo = 16, .hi = 1000, .pixels = 760, .log = true};
  const json t = charts::ticks(days, 48, "r");
  const std::vector<double> v = t["values"];
  REQUIRE(v.size() >= 5);
  CHECK(v.back() >= 500);
  CHECK(v.back() <= 1000);
  CHECK(v.front() >= 16);
  for (size_t i = 1; i < v.size(); ++i) CHECK(days.to_px(v[i]) - days.to_px(v[i - 1]) >= 48);
  // $1.2M to $1.6M (less than a decade): the old axis wrote "$1.4M" five times.
  const charts::PixelScale usd{.lo = 1.2e6, .hi = 1.6e6, .pixels = 440, .log = true, .down = true};
  const json c = charts::ticks(usd, 22, "s", "$");
  const std::vector<double> cv = c["values"];
  REQUIRE(cv.size() >= 4);
  // The format's precision writes each value exactly, so no two labels read the same.
  const std::string format = c["format"];
  REQUIRE(format.rfind("$,.", 0) == 0);
  const int digits = std::stoi(format.substr(3));
  std::set<double> written;
  for (double x : cv) {
    const double unit = std::pow(10.0, std::floor(std::log10(x)) - digits + 1);
    CHECK(std::abs(std::round(x / unit) * unit - x) < 1e-6 * x);
    written.insert(std::round(x / unit) * unit);
  }
  CHECK(written.size() == cv.size());
}

TEST_CASE("search chart: ZeRO stages as four shapes, one triangle at most; layouts by hue") {
  std::vector<Candidate> plans(3);
  plans[0].plan.tp = 8;
  plans[0].plan.zero = 1;
  plans[1].plan.pp = 4;
  plans[1].plan.zero = 3;
  plans[2].plan.tp = 2;
  plans[2].plan.pp = 2;
  for (size_t i = 0; i < plans.size(); ++i) {
    plans[i].peak_bytes = (40 + 10.0 * i) * kGiB;
    plans[i].step_s = 30 + i;
  }
  const json spec = search_chart(plans, &plans[0].plan, &plans[1].plan, 79.65 * kGiB).spec;
  const json& enc = spec["layer"][0]["encoding"];
  // The legend lists the stages drawn, each in its own shape.
  CHECK(enc["shape"]["scale"]["domain"] == json({"ZeRO-0", "ZeRO-1", "ZeRO-3"}));
  CHECK(enc["shape"]["scale"]["range"] == json({"circle", "square", "cross"}));
  plans.push_back(plans[0]);
  plans.back().plan.zero = 2;
  const json all = search_chart(plans, nullptr, nullptr, 79.65 * kGiB).spec;
  const std::vector<std::string> shapes = all["layer"][0]["encoding"]["shape"]["scale"]["range"];
  REQUIRE(shapes.size() == 4);
  CHECK(std::count_if(shapes.begin(), shapes.end(), [](const std::string& s) {
          return s.find("triangle") != std::string::npos;
        }) <= 1);
  CHECK(std::set<std::string>(shapes.begin(), shapes.end()).size() == 4);
  const std::vector<std::string> hues = enc["color"]["scale"]["range"];
  CHECK(hues.size() == 3);  // only the layouts drawn: TP, PP, TP + PP
  CHECK(min_difference(hues) >= 20);
  CHECK(spec["layer"][0]["mark"]["size"].get<double>() >= 40);  // not a 5-pixel marker
}

TEST_CASE("memory chart: sixteen stages' totals never run into each other") {
  MemoryBreakdown m;
  m.capacity_bytes = 79.65 * kGiB;
  for (int i = 0; i < 16; ++i) {
    StageMemory s;
    s.stage = i;
    s.weights_bytes = (100 + 3.3 * i) * kGiB;  // over capacity: the longest labels
    m.stages.push_back(s);
  }
  const json spec = memory_chart(m, "pp 16").spec;
  const double step = spec["width"].get<double>() / 16;
  const json& totals = spec["layer"][1]["data"]["values"];
  REQUIRE(totals.size() == 16);
  int written = 0;
  for (const json& t : totals) {
    const std::string label = t["label"];
    if (label.empty()) continue;
    ++written;
    CHECK(charts::text_width(label, 11) <= step);  // inside its own bar's column
  }
  CHECK(written >= 1);
  // Sixty stages: too narrow for any number, so the fullest alone is written.
  m.stages.resize(60, m.stages.back());
  const json wide = memory_chart(m, "pp 60").spec["layer"][1]["data"]["values"];
  CHECK(std::count_if(wide.begin(), wide.end(), [](const json& t) { return t["label"] != ""; }) ==
        1);
}

TEST_CASE("memory chart: a total just under the capacity is written over the line, not on it") {
  MemoryBreakdown m;
  m.capacity_bytes = 79.65 * kGiB;
  StageMemory s;
  s.weights_bytes = 77 * kGiB;
  m.stages = {s};
  const json t = memory_chart(m, "near").spec["layer"][1]["data"]["values"][0];
  CHECK(t["label_at"].get<double>() == doctest::Approx(79.65));
  s.weights_bytes = 40 * kGiB;
  m.stages = {s};
  CHECK(memory_chart(m, "far").spec["layer"][1]["data"]["values"][0]["label_at"].get<double>() ==
        doctest::Approx(40));
}

TEST_CASE("bar words end inside the plot however long they are") {
  const double w = 620;
  const double words =
      charts::text_width("32.24 s closed form; simulated 32.24 s, MFU 49%", 11, true);
  const double top = charts::end_label_domain({{32.24, words}, {31.89, words}}, w);
  CHECK(32.24 / top * w + 5 + words <= w);
  // A short label needs little room: the bar keeps most of the width.
  CHECK(charts::end_label_domain({{10, 40}}, w) < 12);
}

TEST_CASE("probe: the sizes the bandwidth was fitted on are marked, a fit that misses says so") {
  const json profile = json::parse(
      test::read_file(std::string(SHARDPLAN_TEST_DATA) + "/probe/probe-mpi-2ranks.json"));
  const json spec = busbw_chart(profile, "probe-mpi-2ranks.json").spec;
  int fitted_on = 0;
  int below = 0;
  for (const json& row : spec["data"]["values"]) {
    if (row["kind"] == "measured, fitted on") {
      ++fitted_on;
      CHECK(row["size_bytes"].get<double>() >= 262144);  // within 16x of the 4 MiB largest
    }
    if (row["kind"] == "measured") {
      ++below;
      CHECK(row["size_bytes"].get<double>() < 262144);
    }
    // all_reduce's fit misses its times by 272% (the 4 MiB size falls off a cache cliff).
    if (test::contains(row.value("series", ""), "all_reduce"))
      CHECK(test::contains(row["series"], "rough: misses by 272%"));
  }
  CHECK(fitted_on == 25);  // five collectives x five sizes
  CHECK(below == 75);
  CHECK(spec["vconcat"][0]["width"].get<double>() >= 700);  // not a 300-pixel panel
}

TEST_CASE("probe: no line joins separate GEMM shapes") {
  const json profile = json::parse(
      test::read_file(std::string(SHARDPLAN_TEST_DATA) + "/probe/probe-mpi-2ranks.json"));
  const json spec = gemm_chart(profile, "probe-mpi-2ranks.json").spec;
  for (const json& l : layers_of(spec)) {
    const json mark = l.value("mark", json());
    const bool line = mark == "line" || (mark.is_object() && mark.value("type", "") == "line");
    CHECK_FALSE(line);  // a CPU profile has no fitted curve, so no line at all
    if (mark.is_object()) CHECK_FALSE(mark.contains("point"));
  }
}
