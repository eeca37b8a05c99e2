// From measurements to figures: latency and bus bandwidth per tier and collective (least
// squares on the nccl-tests time model), the GEMM efficiency curve, and stragglers.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "shardplan/probe.hpp"

namespace shardplan::probe {

LinkFit fit_link(Collective c, int ranks, std::span<const SizeTime> points) {
  // t = a + x / B with x = S x bus factor (the bytes each rank moves, in busbw terms).
  // Weights 1/t^2 minimise the relative error, so 8 B and 1 GiB count alike.
  const double factor = info(c).bus_factor(ranks);
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0, best_busbw = 0, fastest = 0;
  int used = 0;
  for (const SizeTime& p : points) {
    if (!(p.seconds > 0) || !(p.bytes > 0)) continue;
    const double x = p.bytes * factor, t = p.seconds, w = 1 / (t * t);
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    st += w * t;
    sxt += w * x * t;
    best_busbw = std::max(best_busbw, x / t);
    fastest = used == 0 ? t : std::min(fastest, t);
    ++used;
  }
  LinkFit fit;
  fit.points = used;
  if (used == 0) return fit;
  double a = 0, b = 0;  // b = 1 / B
  const double det = sw * sxx - sx * sx;
  if (used >= 2 && det > 0) {
    a = (sxx * st - sx * sxt) / det;
    b = (sw * sxt - sx * st) / det;
  }
  if (a < 0 && sxx > 0) {  // no negative latency: fit the slope through the origin
    a = 0;
    b = sxt / sxx;
  }
  if (!(b > 0)) {  // times that do not grow with size (noise, or one point): best observed
    a = used >= 2 ? fastest : 0;
    b = 1 / best_busbw;
  }
  fit.latency_s = a;
  fit.step_latency_s = a / info(c).latency_steps(ranks);
  fit.busbw_bytes_per_s = 1 / b;
  double sum_sq = 0;
  for (const SizeTime& p : points) {
    if (!(p.seconds > 0) || !(p.bytes > 0)) continue;
    const double predicted = a + p.bytes * factor * b;
    sum_sq += std::pow((predicted - p.seconds) / p.seconds, 2);
  }
  fit.residual = std::sqrt(sum_sq / used);
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
  std::vector<MathDtype> order = {MathDtype::bf16, MathDtype::fp16, MathDtype::fp8, MathDtype::tf32};
  for (MathDtype d : order) {
    if (gpu.peak_flops[static_cast<int>(d)] <= 0) continue;
    for (const GemmRow& g : results.gemms) {
      if (g.shape.dtype == d && g.wrong == 0 && g.flops_per_s > 0) return d;
    }
  }
  return MathDtype::bf16;
}

}  // namespace

FitResult fit_results(const Results& results, const GpuSpec& gpu) {
  FitResult out;
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
  for (const GemmRow& g : results.gemms) {
    const auto flagged = find_stragglers(fmt::format("GEMM {}x{}x{} {}", g.shape.m, g.shape.n,
                                                     g.shape.k, to_string(g.shape.dtype)),
                                         g.rank_s, results.ranks);
    out.stragglers.insert(out.stragglers.end(), flagged.begin(), flagged.end());
  }
  if (!results.gemm_on_gpu) return out;  // a CPU's GEMMs say nothing about the GPU's curve
  out.curve_dtype = curve_dtype(results, gpu);
  const double peak = gpu.peak_flops[static_cast<int>(out.curve_dtype)];
  if (!(peak > 0)) return out;
  std::map<double, double> best;  // flops -> best efficiency among shapes of that size
  for (const GemmRow& g : results.gemms) {
    if (g.shape.dtype != out.curve_dtype || g.wrong != 0 || !(g.flops_per_s > 0)) continue;
    double& e = best[g.shape.flops()];
    e = std::max(e, std::min(1.0, g.flops_per_s / peak));
  }
  for (const auto& [flops, efficiency] : best) out.gemm_curve.push_back({flops, efficiency});
  return out;
}

}  // namespace shardplan::probe
