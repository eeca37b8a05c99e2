// The calibrated cluster profile: the preset it starts from with the measured figures put in
// (each with a source that says how it was measured), the raw rows, the fit and the provenance.
// It loads through load_cluster like any cluster file, so `--cluster FILE` plans with it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fit.hpp"
#include "shardplan/error.hpp"
#include "shardplan/names.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"
#include "shardplan/version.hpp"

namespace shardplan::probe {
namespace {

using nlohmann::json;

// How fit_link() turns rows into figures (probe.hpp), for the profile's sources.
constexpr const char* kFitMethod =
    "t = latency + S x bus factor / busbw (S and bus factors as nccl-tests' PERFORMANCE.md "
    "defines them) on each size's median iteration averaged over ranks: busbw from the "
    "least-squares slope over the sizes within 16x of the largest, latency from every size "
    "with that slope fixed (weights 1/t^2)";

json parse_profile(ProfileKind kind, const std::string& name, const std::string& field) {
  return json::parse(profile_text(kind, name, field).first);
}

double round_to(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

// The fitted GEMM curve as [flops, efficiency] pairs, efficiencies to 4 significant digits: a
// tiny GEMM's (1e-5 of peak) stays above the 0 the loader refuses, where 4 decimals wrote 0.
json curve_json(const FitResult& fit) {
  json curve = json::array();
  for (const EfficiencyPoint& p : fit.gemm_curve) {
    curve.push_back({p.flops, round_significant(p.efficiency, 4)});
  }
  return curve;
}

// The GPU object the profile starts from, and the cluster preset if there is one.
json base_gpu(const ProfileInputs& in, const json& cluster) {
  if (!in.gpu.empty()) return parse_profile(ProfileKind::gpu, in.gpu, "--gpu");
  if (!cluster.is_null()) {
    const json& g = cluster.at("gpu");
    return g.is_object() ? g : parse_profile(ProfileKind::gpu, g.get<std::string>(), "--cluster");
  }
  return parse_profile(ProfileKind::gpu, "H100-SXM", "--gpu");
}

// A link the probe did not measure: the preset's object, its sources saying so.
json preset_link(const json& value, const std::string& field, const std::string& why) {
  json link;
  if (value.is_object()) {
    link = value;
  } else {
    const std::string name = value.get<std::string>();
    try {
      link = parse_profile(ProfileKind::link, name, field);
    } catch (const InputError&) {  // a typed bandwidth such as "100Gbit/s"
      const LinkSpec l = load_link(name, field);
      link = {{"name", name},
              {"gb_per_s", l.bytes_per_s / kGB},
              {"busbw_gb_per_s", l.busbw_bytes_per_s / kGB},
              {"latency_us", 0},
              {"sources",
               {{"gb_per_s", "typed as " + name},
                {"busbw_gb_per_s", "typed as " + name},
                {"latency_us", "typed bandwidth: no latency term"}}}};
    }
  }
  for (auto& [key, text] : link["sources"].items()) {
    text = fmt::format("not measured ({}); preset {}: {}", why, link.value("name", ""),
                       text.get<std::string>());
  }
  return link;
}

std::string sizes_text(const Results& r) {
  return fmt::format("sizes {} B to {} B, {} timed iterations after {} warm-up", r.plan.min_bytes,
                     r.plan.max_bytes, r.plan.settings.iters, r.plan.settings.warmup);
}

// A tier the probe measured, as a link object.
json measured_link(const TierFit& tier, const Results& r, const std::string& what) {
  const LinkFit* all_reduce = tier.find(Collective::all_reduce);
  const LinkFit* send_recv = tier.find(Collective::send_recv);
  const auto& [first_kind, first_fit] = tier.collectives.front();
  const LinkFit* generic = all_reduce ? all_reduce : &first_fit;
  const char* generic_name = all_reduce ? "all_reduce" : info(first_kind).name;
  double best = 0;
  json per = json::object();
  for (const auto& [c, fit] : tier.collectives) {
    per[info(c).name] = round_to(fit.busbw_bytes_per_s / kGB, 6);
    best = std::max(best, fit.busbw_bytes_per_s);
  }
  const double link_bw = send_recv ? send_recv->busbw_bytes_per_s : best;
  const std::string where =
      fmt::format("shardplan probe ({}) on {} ranks, {} per node, {}", r.backend, tier.group.ranks,
                  tier.group.ranks_per_node, sizes_text(r));
  json link = {
      {"name", fmt::format("measured-{}", to_string(tier.group.tier))},
      {"description", fmt::format("{} measured by {}", what, where)},
      {"gb_per_s", round_to(link_bw / kGB, 6)},
      {"busbw_gb_per_s", round_to(generic->busbw_bytes_per_s / kGB, 6)},
      {"latency_us", round_to(generic->step_latency_s * 1e6, 3)},
      {"measured", true},
      {"collective_busbw_gb_per_s", per},
      {"sources",
       {{"gb_per_s", send_recv ? "measured: send_recv bus bandwidth (one direction, = algbw), "
                                 "fitted asymptote; " +
                                     where
                               : "measured: the highest fitted bus bandwidth of any collective "
                                 "(send_recv was not run); " +
                                     where},
        {"busbw_gb_per_s",
         fmt::format("measured: {} bus bandwidth, fitted asymptote; {}", generic_name, where)},
        {"latency_us", fmt::format("measured: {} fitted latency divided by its ring steps; {}",
                                   generic_name, where)},
        {"collective_busbw_gb_per_s",
         "measured: per collective, " + std::string(kFitMethod) + "; " + where}}}};
  // A back-end that moved CPU memory says so: the planner prices GPUs with this figure.
  const std::string& medium = r.link_medium[static_cast<size_t>(tier.group.tier)];
  if (!medium.empty()) {
    link["medium"] = medium;
    link["description"] = link["description"].get<std::string>() + "; measured over " + medium;
  }
  return link;
}

json time_json(const TimeStats& t) {
  return {{"min", round_to(t.min_s * 1e6, 3)},
          {"avg", round_to(t.avg_s * 1e6, 3)},
          {"max", round_to(t.max_s * 1e6, 3)},
          {"median", round_to(t.median_s * 1e6, 3)}};
}

json measurements_json(const Results& r) {
  json rows = json::array();
  for (const CollectiveRow& row : r.rows) {
    const bool reduces =
        row.shape.kind == Collective::all_reduce || row.shape.kind == Collective::reduce_scatter;
    rows.push_back({{"tier", to_string(row.group.tier)},
                    {"ranks", row.group.ranks},
                    {"ranks_per_node", row.group.ranks_per_node},
                    {"groups", row.group.groups},
                    {"collective", info(row.shape.kind).name},
                    {"size_bytes", row.shape.bytes},
                    {"count", row.shape.count()},
                    {"type", "float"},
                    {"redop", reduces ? "sum" : "none"},
                    {"time_us", time_json(row.time)},
                    {"algbw_gb_per_s", round_to(row.algbw_bytes_per_s / kGB, 6)},
                    {"busbw_gb_per_s", round_to(row.busbw_bytes_per_s / kGB, 6)},
                    {"call", row.call},
                    {"wrong", row.wrong},
                    {"correct", row.wrong == 0}});
  }
  json gemms = json::array();
  for (const GemmRow& g : r.gemms) {
    gemms.push_back({{"m", g.shape.m},
                     {"n", g.shape.n},
                     {"k", g.shape.k},
                     {"dtype", gemm_format_name(g.shape)},
                     {"label", g.shape.label},
                     {"flops", g.shape.flops()},
                     {"time_us", time_json(g.time)},
                     {"tflop_per_s", round_to(g.flops_per_s / kTera, 6)},
                     {"iterations", g.iters},
                     {"call", g.detail},
                     {"wrong", g.wrong},
                     {"correct", g.wrong == 0}});
  }
  json host = json::array();
  for (const HostRow& h : r.host) {
    host.push_back({{"move", to_string(h.shape.kind)},
                    {"size_bytes", h.shape.array_bytes},
                    {"moved_bytes", h.shape.moved_bytes()},
                    {"time_us", time_json(h.time)},
                    {"rank_gb_per_s", round_to(h.rank_bytes_per_s / kGB, 6)},
                    {"node_gb_per_s", round_to(h.node_bytes_per_s / kGB, 6)},
                    {"wrong", h.wrong},
                    {"correct", h.wrong == 0}});
  }
  json measured = {{"collectives", rows}, {"gemm", gemms}, {"host", host}};
  if (!r.pairs.empty()) {
    json pairs = json::array();
    for (const PairRow& p : r.pairs) {
      pairs.push_back({{"offset", p.offset},
                       {"nodes", {p.node_a, p.node_b}},
                       {"hosts", {p.host_a, p.host_b}},
                       {"ranks", {p.rank_a, p.rank_b}},
                       {"where", p.where},
                       {"size_bytes", p.bytes},
                       {"time_us", round_to(p.seconds * 1e6, 3)},
                       {"gb_per_s", round_to(p.bytes_per_s / kGB, 6)},
                       {"wrong", p.wrong},
                       {"correct", p.wrong == 0}});
    }
    measured["pairs"] = pairs;
  }
  return measured;
}

// The host side: the preset's facts (the --cluster preset's host, else the GPU profile's) with
// what the probe measured beside them; offload pricing takes the measured figures first.
void put_host(json& profile, const Results& r, const FitResult& fit, const json& cluster,
              const json& gpu, const std::string& host_list, const std::string& date) {
  const HostFit& h = fit.host;
  if (!(h.h2d_bytes_per_s > 0 || h.d2h_bytes_per_s > 0 || h.dram_bytes_per_s > 0)) return;
  json host = !cluster.is_null() && cluster.contains("host") ? cluster.at("host")
              : gpu.contains("host")                         ? gpu.at("host")
                                                             : json::object();
  json measured = json::object(), sources = json::object();
  const std::string where =
      fmt::format("shardplan probe ({}) on {} at {}", r.backend, host_list, date);
  if (h.h2d_bytes_per_s > 0 && h.d2h_bytes_per_s > 0) {
    measured["h2d_gb_per_s"] = round_to(h.h2d_bytes_per_s / kGB, 3);
    measured["d2h_gb_per_s"] = round_to(h.d2h_bytes_per_s / kGB, 3);
    const std::string how = fmt::format(
        "measured by {}: {} B pinned buffer (cudaHostAlloc) copied with cudaMemcpyAsync {}, every "
        "GPU of the node at once, bytes / the average over GPUs of the mean iteration (CUDA events)",
        where, h.link_bytes, "{}");
    sources["h2d_gb_per_s"] = fmt::format(fmt::runtime(how), "host to device");
    sources["d2h_gb_per_s"] = fmt::format(fmt::runtime(how), "device to host");
  }
  if (h.dram_bytes_per_s > 0) {
    measured["dram_gb_per_s"] = round_to(h.dram_bytes_per_s / kGB, 3);
    sources["dram_gb_per_s"] = fmt::format(
        "measured by {}: STREAM Triad (a = b + q c, 3 x 8 B counted per element) over {} B arrays "
        "on {} rank(s) of the node at once, the sum of the ranks' rates, the slowest node",
        where, h.stream_array_bytes, h.stream_ranks_per_node);
  }
  measured["sources"] = sources;
  host["measured"] = measured;
  profile["host"] = host;
}

json tiers_json(const FitResult& fit) {
  json tiers = json::object();
  for (const TierFit& t : fit.tiers) {
    json per = json::object();
    for (const auto& [c, f] : t.collectives) {
      per[info(c).name] = {{"latency_us", round_to(f.latency_s * 1e6, 3)},
                           {"latency_per_step_us", round_to(f.step_latency_s * 1e6, 3)},
                           {"busbw_gb_per_s", round_to(f.busbw_bytes_per_s / kGB, 6)},
                           {"residual", round_to(f.residual, 4)},
                           {"slope_from_bytes", std::round(f.slope_from_bytes)},
                           {"points", f.points}};
    }
    tiers[to_string(t.group.tier)] = {{"ranks", t.group.ranks},
                                      {"ranks_per_node", t.group.ranks_per_node},
                                      {"groups", t.group.groups},
                                      {"collectives", per}};
  }
  return tiers;
}

json gemm_fit_json(const Results& r, const FitResult& fit, const GpuSpec& gpu, bool curve_applied) {
  const json curve = curve_json(fit);
  json achieved = json::array();
  for (const GemmRow& g : r.gemms) {
    achieved.push_back(
        {g.shape.flops(), round_to(g.flops_per_s / kTera, 6), gemm_format_name(g.shape)});
  }
  json gemm = {{"device", r.gemm_on_gpu ? "gpu" : "cpu"},
               {"achieved_tflop_per_s", achieved},
               {"applied_to_gpu_profile", curve_applied}};
  if (r.gemm_on_gpu) {
    gemm["dtype"] = to_string(fit.curve_dtype);
    gemm["peak_tflops"] = gpu.peak_flops[static_cast<int>(fit.curve_dtype)] / kTera;
    gemm["curve"] = curve;
    gemm["in_step_share"] = in_step_share();
    gemm["note"] = fmt::format(
        "efficiency = {:.3f} x achieved / the GPU profile's dense peak, the best shape per size: "
        "the probe times isolated GEMMs (median call after a timed warm-up), and {:.3f} is the "
        "share of an isolated GEMM's speed that GEMMs inside a training step reach, as every "
        "GPU preset applies it to MAMF; achieved_tflop_per_s holds the raw figures",
        in_step_share(), in_step_share());
  } else {
    gemm["note"] =
        "measured on the CPU (the mpi back-end's BLAS): kept here and out of the GPU "
        "profile's gemm_efficiency curve, which stays the preset's";
  }
  return gemm;
}

// Per rank: each GEMM and each collective's largest size, so a slow rank can be found.
json per_rank_json(const Results& r) {
  std::map<int, json> per_rank;
  for (const RankInfo& rank : r.ranks) {
    per_rank[rank.rank] = {{"rank", rank.rank},
                           {"host", rank.host},
                           {"device", rank.device},
                           {"gemm_us", json::object()},
                           {"link_us", json::object()}};
  }
  for (const GemmRow& g : r.gemms) {
    const std::string key =
        fmt::format("{}x{}x{} {}", g.shape.m, g.shape.n, g.shape.k, gemm_format_name(g.shape));
    for (const auto& [rank, s] : g.rank_s) per_rank[rank]["gemm_us"][key] = round_to(s * 1e6, 3);
  }
  std::map<std::string, const CollectiveRow*> largest;
  for (const CollectiveRow& row : r.rows) {
    largest[fmt::format("{} {}", to_string(row.group.tier), info(row.shape.kind).name)] = &row;
  }
  for (const auto& [name, row] : largest) {
    const std::string key = fmt::format("{} {} B", name, row->shape.bytes);
    for (const auto& [rank, s] : row->rank_s) per_rank[rank]["link_us"][key] = round_to(s * 1e6, 3);
  }
  json ranks = json::array();
  for (auto& [rank, j] : per_rank) ranks.push_back(j);
  return ranks;
}

json stragglers_json(const FitResult& fit) {
  json flagged = json::array();
  for (const Straggler& s : fit.stragglers) {
    flagged.push_back({{"what", s.what},
                       {"rank", s.rank},
                       {"host", s.host},
                       {"time_us", round_to(s.seconds * 1e6, 3)},
                       {"median_us", round_to(s.median_s * 1e6, 3)},
                       {"ratio", round_to(s.ratio, 3)}});
  }
  return {{"threshold", kStragglerThreshold},
          {"rule", fmt::format("a rank is flagged when its time exceeds the median across ranks "
                               "by more than {:.0f}% (slowest against the median), per GEMM "
                               "and per collective at its largest size",
                               (kStragglerThreshold - 1) * 100)},
          {"flagged", flagged}};
}

json fit_json(const Results& r, const FitResult& fit, const GpuSpec& gpu, bool curve_applied) {
  json skipped = json::object();
  for (const GroupInfo& g : r.groups) {
    if (!g.skipped.empty()) skipped[to_string(g.tier)] = g.skipped;
  }
  return {{"model", kFitMethod},          {"tiers", tiers_json(fit)},
          {"skipped_tiers", skipped},     {"gemm", gemm_fit_json(r, fit, gpu, curve_applied)},
          {"per_rank", per_rank_json(r)}, {"stragglers", stragglers_json(fit)}};
}

json provenance_json(const Results& r, const ProfileInputs& in) {
  std::vector<std::string> hosts, devices;
  json ranks = json::array();
  for (const RankInfo& rank : r.ranks) {
    if (std::find(hosts.begin(), hosts.end(), rank.host) == hosts.end()) hosts.push_back(rank.host);
    if (std::find(devices.begin(), devices.end(), rank.device) == devices.end()) {
      devices.push_back(rank.device);
    }
    ranks.push_back({{"rank", rank.rank},
                     {"process", rank.process},
                     {"host", rank.host},
                     {"node", rank.node},
                     {"local_rank", rank.local_rank},
                     {"device", rank.device}});
  }
  json collectives = json::array();
  for (Collective c : r.plan.collectives) collectives.push_back(info(c).name);
  return {{"tool", "shardplan 0.1.0 probe"},
          {"backend", r.backend},
          {"date", in.date_utc},
          {"command_line", in.command_line},
          {"shardplan", shardplan_version()},
          {"hosts", hosts},
          {"devices", devices},
          {"ranks", ranks},
          {"libraries", r.libraries},
          {"settings",
           {{"warmup", r.plan.settings.warmup},
            {"iters", r.plan.settings.iters},
            {"timeout_s", r.plan.settings.timeout_s},
            {"min_bytes", r.plan.min_bytes},
            {"max_bytes", r.plan.max_bytes},
            {"type", "float"},
            {"collectives", collectives}}},
          {"notes", r.notes}};
}

int ranks_per_node(const Results& r) {
  std::map<int, int> per_node;
  for (const RankInfo& rank : r.ranks) ++per_node[rank.node];
  int most = 1;
  for (const auto& [node, count] : per_node) most = std::max(most, count);
  return most;
}

}  // namespace

GpuSpec profile_gpu(const ProfileInputs& in) {
  if (!in.gpu.empty()) return load_gpu(in.gpu, "--gpu");
  if (!in.cluster.empty()) return load_cluster(in.cluster, "--cluster").gpu;
  return load_gpu("H100-SXM", "--gpu");
}

namespace {

std::string host_list_of(const Results& r) {
  std::set<std::string> hosts;
  for (const RankInfo& rank : r.ranks) hosts.insert(rank.host);
  std::string list;
  for (const auto& h : hosts) list += (list.empty() ? "" : ", ") + h;
  return list;
}

// The GPU: the measured memory and GEMM curve replace the preset's when the GPU was measured.
// Returns whether the curve was applied.
bool apply_gpu_measurements(json& gpu, const Results& r, const FitResult& fit,
                            const ProfileInputs& in, const GpuSpec& gpu_spec,
                            const std::string& host_list) {
  const bool curve_applied = r.gemm_on_gpu && !fit.gemm_curve.empty();
  if (curve_applied) {
    gpu["gemm_efficiency"] = curve_json(fit);
    gpu["calibrated"] = true;
    gpu["sources"]["gemm_efficiency"] = fmt::format(
        "measured by shardplan probe ({}) on {} ({}) at {}: cublasLtMatmul {}, {} shapes, "
        "efficiency = {:.3f} x achieved (the in-step share of an isolated GEMM, as the presets apply "
        "to MAMF) / {} dense peak {:.1f} TFLOP/s of the {} profile",
        r.backend, host_list, r.ranks.front().device, in.date_utc, to_string(fit.curve_dtype),
        fit.gemm_curve.size(), in_step_share(), to_string(fit.curve_dtype),
        gpu_spec.peak_flops[static_cast<int>(fit.curve_dtype)] / kTera, gpu_spec.name);
  }
  if (r.gemm_on_gpu && !r.ranks.empty() && r.ranks.front().device_memory_bytes > 0) {
    gpu["memory_gib"] = round_to(r.ranks.front().device_memory_bytes / kGiB, 3);
    gpu["sources"]["memory_gib"] =
        fmt::format("measured: cudaGetDeviceProperties totalGlobalMem of {} on {}",
                    r.ranks.front().device, host_list);
  }
  const std::string measured =
      curve_applied ? "; GEMM curve and memory measured by shardplan probe on " + host_list : "";
  gpu["description"] = gpu.value("description", gpu.value("name", "")) + measured;
  return curve_applied;
}

struct NicCount {
  int nics = 0;
  std::string source;
};

// NICs per node from a fit of the world measurement: the world all-reduce runs at
// min(intra, k x nic x nics / G) (collectives.hpp). None when the tiers are missing or the NICs
// were not the bottleneck (then the source says why).
NicCount fitted_nics(const FitResult& fit, int gpus_per_node) {
  const TierFit* intra = fit.find(Tier::intra);
  const TierFit* inter = fit.find(Tier::inter);
  const TierFit* world = fit.find(Tier::world);
  if (!(world && intra && inter && world->find(Collective::all_reduce) &&
        intra->find(Collective::all_reduce) && inter->find(Collective::all_reduce))) {
    return {};
  }
  const double w = world->find(Collective::all_reduce)->busbw_bytes_per_s;
  const double i = intra->find(Collective::all_reduce)->busbw_bytes_per_s;
  const double n = inter->find(Collective::all_reduce)->busbw_bytes_per_s;
  const int k = world->group.ranks_per_node;
  if (w >= 0.9 * i) {
    return {0, fmt::format("the world all_reduce ({:.3g} GB/s) ran at the intra tier's speed "
                           "({:.3g} GB/s): the NICs were not the bottleneck, so it cannot "
                           "count them; ",
                           w / kGB, i / kGB)};
  }
  const int nics =
      std::clamp(static_cast<int>(std::lround(w * gpus_per_node / (k * n))), 1, gpus_per_node);
  return {nics, fmt::format("fitted: the world all_reduce reached {:.3g} GB/s with {} ranks per "
                            "node and {:.3g} GB/s per NIC, so min(intra, k x nic x nics / "
                            "gpus_per_node) gives {} NIC(s)",
                            w / kGB, k, n / kGB, nics)};
}

// NICs per node: the flag, a fit of the world measurement, or the preset's convention.
NicCount nics_per_node(const FitResult& fit, const ProfileInputs& in, const json& cluster,
                       const json& gpu, int gpus_per_node) {
  if (in.nics_per_node > 0) return {in.nics_per_node, "--nics-per-node"};
  NicCount out = fitted_nics(fit, gpus_per_node);
  if (out.nics > 0) return out;
  if (!cluster.is_null()) {
    const int preset_nics = cluster.at("nics_per_node").get<int>();
    const int preset_gpus = cluster.at("gpus_per_node").get<int>();
    out.nics = std::max(1, static_cast<int>(std::lround(static_cast<double>(preset_nics) *
                                                        gpus_per_node / preset_gpus)));
    out.source += fmt::format(
        "cluster preset {}: {} NIC(s) for {} GPUs, scaled to {} GPU(s) "
        "per node",
        cluster.value("name", in.cluster), preset_nics, preset_gpus, gpus_per_node);
    return out;
  }
  const std::string inter_name = gpu.value("inter_link", "");
  json link;
  try {
    link = parse_profile(ProfileKind::link, inter_name, "inter_link");
  } catch (const InputError&) {
  }
  const bool per_gpu = link.is_object() && link.value("nics", "") == "one_per_gpu";
  out.nics = per_gpu ? gpus_per_node : 1;
  out.source += fmt::format("the GPU profile's scale-out link {}: {}", inter_name,
                            per_gpu ? "one NIC per GPU" : "one NIC per node");
  return out;
}

// The intra and inter links: the measured tier, else the preset's link with the reason it was
// not measured.
void put_links(json& profile, const Results& r, const FitResult& fit, const json& cluster,
               const json& gpu) {
  auto skipped = [&](Tier t) {
    for (const GroupInfo& g : r.groups) {
      if (g.tier == t) return g.skipped.empty() ? std::string("no usable measurement") : g.skipped;
    }
    return std::string("not run");
  };
  const TierFit* intra = fit.find(Tier::intra);
  const TierFit* inter = fit.find(Tier::inter);
  profile["intra"] =
      intra ? measured_link(*intra, r, "the link inside a node, per GPU")
            : preset_link(cluster.is_null() ? gpu.at("intra_link") : cluster.at("intra"), "intra",
                          skipped(Tier::intra));
  profile["inter"] =
      inter ? measured_link(*inter, r, "one NIC: the inter-node link with one rank per node")
            : preset_link(cluster.is_null() ? gpu.at("inter_link") : cluster.at("inter"), "inter",
                          skipped(Tier::inter));
}

}  // namespace

json build_profile(const Results& r, const FitResult& fit, const ProfileInputs& in) {
  const json cluster =
      in.cluster.empty() ? json() : parse_profile(ProfileKind::cluster, in.cluster, "--cluster");
  json gpu = base_gpu(in, cluster);
  const GpuSpec gpu_spec = profile_gpu(in);
  const std::string host_list = host_list_of(r);
  const bool curve_applied = apply_gpu_measurements(gpu, r, fit, in, gpu_spec, host_list);

  json profile;
  const std::string day = in.date_utc.substr(0, 10);
  const std::string first_host = host_list.substr(0, host_list.find(','));
  profile["name"] = fmt::format("probed-{}-{}", first_host,
                                day.substr(0, 4) + day.substr(5, 2) + day.substr(8, 2));
  profile["description"] = fmt::format("measured by shardplan probe ({}) on {} at {}", r.backend,
                                       host_list, in.date_utc);
  if (!r.link_medium[static_cast<size_t>(Tier::intra)].empty()) {
    profile["description"] = profile["description"].get<std::string>() +
                             fmt::format(
                                 "; links measured between CPU processes, not between {} "
                                 "GPUs (whose other figures are the preset's)",
                                 gpu.value("name", std::string("the profile's")));
  }
  profile["gpu"] = gpu;

  const int measured_per_node = ranks_per_node(r);
  const int gpus_per_node = in.gpus_per_node > 0 ? in.gpus_per_node : measured_per_node;
  profile["gpus_per_node"] = gpus_per_node;
  json sources;
  sources["gpus_per_node"] =
      in.gpus_per_node > 0
          ? fmt::format("--gpus-per-node {} (the probe ran {} rank(s) per node)", gpus_per_node,
                        measured_per_node)
          : fmt::format("measured: {} rank(s) per node (MPI_COMM_TYPE_SHARED groups / local GPUs)",
                        measured_per_node);
  // The scale-up domain is not something the probe sees from inside one host (an NVL72 rack's
  // trays reach each other over NVLink): a rack-scale preset's domain is kept, with its source.
  if (!cluster.is_null() && cluster.contains("gpus_per_domain")) {
    const int domain = cluster.at("gpus_per_domain").get<int>();
    if (domain > gpus_per_node && domain % gpus_per_node == 0) {
      profile["gpus_per_domain"] = domain;
      sources["gpus_per_domain"] = fmt::format(
          "--cluster {}: {}", cluster.value("name", in.cluster),
          cluster.at("sources").value("gpus_per_domain", std::string("the preset's domain")));
    }
  }
  put_links(profile, r, fit, cluster, gpu);
  put_host(profile, r, fit, cluster, gpu, host_list, in.date_utc);
  const NicCount nics = nics_per_node(fit, in, cluster, gpu, gpus_per_node);
  profile["nics_per_node"] = nics.nics;
  sources["nics_per_node"] = nics.source;
  profile["measurements"] = measurements_json(r);
  profile["fit"] = fit_json(r, fit, gpu_spec, curve_applied);
  profile["provenance"] = provenance_json(r, in);
  profile["sources"] = sources;
  return profile;
}

}  // namespace shardplan::probe
