// From measurements to figures: latency and bus bandwidth per tier and collective (the
// nccl-tests time model fitted by least squares), the GEMM efficiency curve, and stragglers.
#include "fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "shardplan/fitted_profile.hpp"

namespace shardplan::probe {

double in_step_share() {
  double m = 1;
  for (const FittedConstant& c : shipped_fit().constants)
    if (c.name == "gemm_share_of_mamf") m = c.multiplier;
  return 0.84 * m;  // the GPU presets' share of MAMF, as the fit refines it
}


LinkFit fit_link(Collective c, int ranks, std::span<const SizeTime> points) {
  // t = a + x / B with x = S x bus factor (the bytes each rank moves, in busbw terms). Each
  // parameter is estimated where it shows: B from the slope over the largest sizes, where nccl-
  // tests' busbw is read (small sizes can beat the line rate, e.g. inside a shaper's burst);
  // a from every size with the slope fixed, weighted by 1/t^2 so the small sizes decide it.
  const double factor = info(c).bus_factor(ranks);
  std::vector<std::pair<double, double>> xt;  // (x, t)
  for (const SizeTime& p : points) {
    if (p.seconds > 0 && p.bytes > 0) xt.emplace_back(p.bytes * factor, p.seconds);
  }
  LinkFit fit;
  fit.points = static_cast<int>(xt.size());
  if (xt.empty()) return fit;
  double largest = 0;
  for (const auto& [x, t] : xt) largest = std::max(largest, x);
  // Least squares slope over sizes within 16x of the largest (the top five of a doubling sweep).
  fit.slope_from_bytes = largest / 16 / factor;
  double n = 0, sx = 0, st = 0, sxx = 0, sxt = 0, best_busbw = 0;
  for (const auto& [x, t] : xt) {
    if (x < largest / 16) continue;
    n += 1;
    sx += x;
    st += t;
    sxx += x * x;
    sxt += x * t;
    best_busbw = std::max(best_busbw, x / t);
  }
  const double var = n * sxx - sx * sx;
  double b = var > 0 ? (n * sxt - sx * st) / var : 0;  // seconds per byte = 1 / B
  if (!(b > 0)) b = 1 / best_busbw;  // times that do not grow with size: the best observed
  double sw = 0, swr = 0;
  for (const auto& [x, t] : xt) {
    const double w = 1 / (t * t);
    sw += w;
    swr += w * (t - b * x);
  }
  const double a = std::max(0.0, swr / sw);
  fit.latency_s = a;
  fit.step_latency_s = a / info(c).latency_steps(ranks);
  fit.busbw_bytes_per_s = 1 / b;
  double sum_sq = 0;
  for (const auto& [x, t] : xt) sum_sq += std::pow((a + b * x - t) / t, 2);
  fit.residual = std::sqrt(sum_sq / static_cast<double>(xt.size()));
  return fit;
}

std::vector<Straggler> find_stragglers(const std::string& what,
                                       std::span<const std::pair<int, double>> rank_s,
                                       const std::vector<RankInfo>& ranks, double threshold) {
  if (rank_s.size() < 2) return {};
  std::vector<double> times;
  for (const auto& [rank, s] : rank_s) times.push_back(s);
  std::sort(times.begin(), times.end());
  const size_t mid = times.size() / 2;
  const double median = times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  std::vector<Straggler> out;
  for (const auto& [rank, s] : rank_s) {
    if (!(median > 0) || s <= threshold * median) continue;
    Straggler st;
    st.what = what;
    st.rank = rank;
    for (const RankInfo& r : ranks) {
      if (r.rank == rank) st.host = r.host;
    }
    st.seconds = s;
    st.median_s = median;
    st.ratio = s / median;
    out.push_back(st);
  }
  return out;
}

const LinkFit* TierFit::find(Collective c) const {
  for (const auto& [kind, fit] : collectives) {
    if (kind == c) return &fit;
  }
  return nullptr;
}

const TierFit* FitResult::find(Tier t) const {
  for (const TierFit& f : tiers) {
    if (f.group.tier == t) return &f;
  }
  return nullptr;
}

namespace {

// The data type whose peak the curve is against: bf16, the training default (as the presets'
// curves are), else the first measured type the GPU has a peak for.
MathDtype curve_dtype(const Results& results, const GpuSpec& gpu) {
  std::vector<MathDtype> order = {MathDtype::bf16, MathDtype::fp16, MathDtype::fp8,
                                  MathDtype::tf32};
  for (MathDtype d : order) {
    if (gpu.peak_flops[static_cast<int>(d)] <= 0) continue;
    for (const GemmRow& g : results.gemms) {
      if (g.shape.dtype == d && !g.shape.block_scaled && g.wrong == 0 && g.flops_per_s > 0)
        return d;
    }
  }
  return MathDtype::bf16;
}

}  // namespace

HostFit fit_host(const Results& results) {
  HostFit h;
  for (const HostRow& row : results.host) {
    if (row.wrong != 0) continue;  // a wrong copy is no measurement
    const HostMove k = row.shape.kind;
    if (is_link(k) && row.shape.array_bytes >= h.link_bytes) {
      if (row.shape.array_bytes > h.link_bytes) h.h2d_bytes_per_s = h.d2h_bytes_per_s = 0;
      h.link_bytes = row.shape.array_bytes;
      (k == HostMove::h2d ? h.h2d_bytes_per_s : h.d2h_bytes_per_s) = row.rank_bytes_per_s;
    }
    if (k == HostMove::dram_triad) {
      h.dram_bytes_per_s = row.node_bytes_per_s;
      h.stream_array_bytes = row.shape.array_bytes;
      std::map<int, int> per_node;
      for (const auto& [rank, s] : row.rank_s) ++per_node[results.ranks.at(rank).node];
      for (const auto& [node, n] : per_node)
        h.stream_ranks_per_node = std::max(h.stream_ranks_per_node, n);
    }
  }
  return h;
}

FitResult fit_results(const Results& results, const GpuSpec& gpu) {
  FitResult out;
  out.host = fit_host(results);
  for (const GroupInfo& g : results.groups) {
    if (!g.skipped.empty()) continue;
    TierFit tier;
    tier.group = g;
    std::map<Collective, std::vector<SizeTime>> by_collective;
    std::map<Collective, const CollectiveRow*> largest;
    for (const CollectiveRow& row : results.rows) {
      if (row.group.tier != g.tier) continue;
      largest[row.shape.kind] = &row;
      if (row.wrong != 0) continue;  // a wrong answer is no measurement
      by_collective[row.shape.kind].push_back(
          {static_cast<double>(row.shape.bytes), row.time.median_s});
    }
    for (const auto& [c, points] : by_collective) {
      const LinkFit fit = fit_link(c, g.ranks, points);
      if (fit.busbw_bytes_per_s > 0) tier.collectives.emplace_back(c, fit);
    }
    for (const auto& [c, row] : largest) {
      const auto flagged = find_stragglers(
          fmt::format("{} tier {} {} B", to_string(g.tier), info(c).name, row->shape.bytes),
          row->rank_s, results.ranks);
      out.stragglers.insert(out.stragglers.end(), flagged.begin(), flagged.end());
    }
    if (!tier.collectives.empty()) out.tiers.push_back(tier);
  }
  // Node pairs: each against the median of the pairs of its kind (inside a domain, across the
  // spine, ...): a pair well below its peers is a slow link or a slow NIC at either end.
  std::map<std::string, std::vector<const PairRow*>> by_where;
  for (const PairRow& p : results.pairs) {
    if (p.wrong == 0 && p.seconds > 0) by_where[p.where].push_back(&p);
  }
  for (const auto& [where, pairs] : by_where) {
    std::vector<double> times;
    for (const PairRow* p : pairs) times.push_back(p->seconds);
    std::sort(times.begin(), times.end());
    const size_t mid = times.size() / 2;
    const double median = times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
    if (pairs.size() < 2) continue;
    for (const PairRow* p : pairs) {
      if (p->seconds <= kStragglerThreshold * median) continue;
      Straggler st;
      st.what = fmt::format("link between nodes {} and {} ({}), {} B both ways", p->node_a,
                            p->node_b, where, p->bytes);
      st.rank = p->rank_a;
      st.host = p->host_a + " <-> " + p->host_b;
      st.seconds = p->seconds;
      st.median_s = median;
      st.ratio = p->seconds / median;
      out.stragglers.push_back(st);
    }
  }
  for (const GemmRow& g : results.gemms) {
    const auto flagged = find_stragglers(
        fmt::format("GEMM {}x{}x{} {}", g.shape.m, g.shape.n, g.shape.k, gemm_format_name(g.shape)),
        g.rank_s, results.ranks);
    out.stragglers.insert(out.stragglers.end(), flagged.begin(), flagged.end());
  }
  if (!results.gemm_on_gpu) return out;  // a CPU's GEMMs say nothing about the GPU's curve
  out.curve_dtype = curve_dtype(results, gpu);
  const double peak = gpu.peak_flops[static_cast<int>(out.curve_dtype)];
  if (!(peak > 0)) return out;
  std::map<double, double> best;  // flops -> best efficiency among shapes of that size
  for (const GemmRow& g : results.gemms) {
    if (g.shape.dtype != out.curve_dtype || g.shape.block_scaled || g.wrong != 0 ||
        !(g.flops_per_s > 0))
      continue;
    double& e = best[g.shape.flops()];
    e = std::max(e, in_step_share() * std::min(1.0, g.flops_per_s / peak));
  }
  for (const auto& [flops, efficiency] : best) out.gemm_curve.push_back({flops, efficiency});
  return out;
}

}  // namespace shardplan::probe
