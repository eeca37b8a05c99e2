// From measurements to figures: the link fit per tier, the GEMM curve, stragglers (fit.cpp), and
// the calibrated profile with its summary and warnings (profile_writer.cpp, report.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "harness.hpp"

namespace shardplan::probe {

// ---- fit -----------------------------------------------------------------------------------

/// t = latency + S x bus factor / busbw: busbw from the least-squares slope over the largest
/// sizes (within 16x of the largest), latency from every size with that slope fixed, weighted by
/// 1/t^2 so the small sizes decide it; the residual is the RMS relative error over all sizes.
struct LinkFit {
  double latency_s = 0;          // the whole collective's fixed cost
  double step_latency_s = 0;     // per ring step (latency / info(c).latency_steps(n))
  double busbw_bytes_per_s = 0;  // asymptotic bus bandwidth
  double residual = 0;           // RMS relative error of the fitted times
  int points = 0;
  double slope_from_bytes = 0;  // the smallest message size S the bandwidth was fitted on
};
/// A fit whose RMS relative residual passes this does not describe the link: a straight line
/// that misses the measured times by more than a quarter (contention, a protocol switch between
/// sizes, or too few iterations). The summary flags it; its latency and busbw are rough.
inline constexpr double kResidualWarning = 0.25;
struct SizeTime {
  double bytes = 0;
  double seconds = 0;
};
LinkFit fit_link(Collective c, int ranks, std::span<const SizeTime> points);

/// A rank whose time exceeds the median across ranks by more than the threshold.
inline constexpr double kStragglerThreshold = 1.20;
struct Straggler {
  std::string what;
  int rank = 0;
  std::string host;
  double seconds = 0;
  double median_s = 0;
  double ratio = 0;
};
std::vector<Straggler> find_stragglers(const std::string& what,
                                       std::span<const std::pair<int, double>> rank_s,
                                       const std::vector<RankInfo>& ranks,
                                       double threshold = kStragglerThreshold);

/// Per tier, per collective fits; the GEMM curve; stragglers.
struct TierFit {
  GroupInfo group;
  std::vector<std::pair<Collective, LinkFit>> collectives;
  const LinkFit* find(Collective c) const;
};
/// The host side: each GPU's host link per direction (the largest copy, all GPUs at once) and the
/// node's memory bandwidth (STREAM Triad, all ranks at once: the pattern closest to CPU Adam's,
/// which reads four arrays and writes three). 0 = not measured.
struct HostFit {
  double h2d_bytes_per_s = 0;
  double d2h_bytes_per_s = 0;
  double dram_bytes_per_s = 0;
  size_t link_bytes = 0;          // the copy size the link figures come from
  size_t stream_array_bytes = 0;  // the STREAM array per rank
  int stream_ranks_per_node = 0;
};
HostFit fit_host(const Results& results);

/// The share of an isolated GEMM's speed that the GEMMs inside a training step reach (clocks
/// and power shared with the rest of the step, caches cold, other kernels between). Every GPU
/// preset's gemm_efficiency applies it to the published MAMF (profiles/gpus/*.json:
/// e_max = 0.84 x MAMF / peak, times the gemm_share_of_mamf multiplier profiles/fit ships); the
/// probe times isolated cuBLASLt GEMMs, MAMF's kind of figure, so the curve it writes takes the
/// same share, or a calibrated profile would price every step 1/0.84 = 1.19x faster than the
/// preset for the same silicon. The raw figures stay in measurements.gemm.
double in_step_share();

struct FitResult {
  HostFit host;
  std::vector<TierFit> tiers;
  // The GEMM efficiency curve: [flops of one GEMM, kInStepShare x achieved / peak] for
  // `curve_dtype` (per-tensor or unscaled GEMMs only).
  MathDtype curve_dtype = MathDtype::bf16;
  std::vector<EfficiencyPoint> gemm_curve;
  std::vector<Straggler> stragglers;
  const TierFit* find(Tier t) const;
};
/// `peak` is the GPU's dense peak per data type; GEMMs measured on a CPU give no curve.
FitResult fit_results(const Results& results, const GpuSpec& gpu);

// ---- the calibrated profile ----------------------------------------------------------------

/// The calibrated cluster profile (loads through load_cluster): preset figures replaced by
/// measured ones, raw measurements, fit and provenance.
nlohmann::json build_profile(const Results& results, const FitResult& fit,
                             const ProfileInputs& inputs);

/// The '#' lines that close the table: fitted figures per tier, the GEMM verdict, stragglers.
std::string render_summary(const Results& results, const FitResult& fit, const GpuSpec& gpu);

/// What the user must know before trusting the profile: fits whose residual passes
/// kResidualWarning, and tiers that were not measured (the profile takes a preset's link for
/// them). One sentence each, without a prefix.
std::vector<std::string> probe_warnings(const Results& results, const FitResult& fit);

}  // namespace shardplan::probe
