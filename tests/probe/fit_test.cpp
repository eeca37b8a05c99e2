// The fit: latency and bus bandwidth from (size, time) rows, stragglers against the median.
#include "fit.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace shardplan;
using namespace shardplan::probe;

namespace {

// nccl-tests' time model for an all-reduce on n ranks: latency + S x 2(n-1)/n / busbw.
std::vector<SizeTime> synthetic(Collective c, int n, double latency_s, double busbw_bytes_per_s,
                                double noise = 0) {
  std::vector<SizeTime> points;
  int i = 0;
  for (double bytes = 8; bytes <= 1 << 30; bytes *= 2, ++i) {
    const double t = latency_s + bytes * info(c).bus_factor(n) / busbw_bytes_per_s;
    // Deterministic +-noise, alternating, so the test is repeatable.
    points.push_back({bytes, t * (1 + (i % 2 ? noise : -noise))});
  }
  return points;
}

}  // namespace

TEST_CASE("fit recovers latency and bandwidth from exact rows") {
  // 8 ranks, 24 us per all-reduce (1.71 us per ring step), 370 GB/s: an NVLink4 node.
  const auto points = synthetic(Collective::all_reduce, 8, 24e-6, 370e9);
  const LinkFit f = fit_link(Collective::all_reduce, 8, points);
  CHECK(f.points == static_cast<int>(points.size()));
  CHECK(f.latency_s == doctest::Approx(24e-6).epsilon(1e-6));
  CHECK(f.step_latency_s == doctest::Approx(24e-6 / 14).epsilon(1e-6));  // 2(n-1) ring steps
  CHECK(f.busbw_bytes_per_s == doctest::Approx(370e9).epsilon(1e-6));
  CHECK(f.residual < 1e-9);
}

TEST_CASE("fit tolerates noise: 5% on every row") {
  const auto points = synthetic(Collective::send_recv, 2, 30e-6, 1.17e9, 0.05);
  const LinkFit f = fit_link(Collective::send_recv, 2, points);
  CHECK(f.busbw_bytes_per_s == doctest::Approx(1.17e9).epsilon(0.06));
  CHECK(f.latency_s == doctest::Approx(30e-6).epsilon(0.10));
  CHECK(f.residual == doctest::Approx(0.05).epsilon(0.2));
}

TEST_CASE("fit of a gather uses its (n-1)/n bus factor") {
  const auto points = synthetic(Collective::all_gather, 4, 10e-6, 20e9);
  const LinkFit f = fit_link(Collective::all_gather, 4, points);
  CHECK(f.busbw_bytes_per_s == doctest::Approx(20e9).epsilon(1e-6));
  CHECK(f.step_latency_s == doctest::Approx(10e-6 / 3).epsilon(1e-6));
}

TEST_CASE("fit reads the bandwidth at the large sizes, not a burst at the small ones") {
  // A shaped link: sizes up to 256 KiB pass in the shaper's burst at 1 GB/s, larger ones at
  // the 125 MB/s rate; nccl-tests' busbw at the top sizes is 125 MB/s.
  std::vector<SizeTime> points;
  for (double bytes = 64 << 10; bytes <= 8 << 20; bytes *= 2) {
    const double burst = 256 << 10;
    const double t = 100e-6 + std::min(bytes, burst) / 1e9 + std::max(0.0, bytes - burst) / 125e6;
    points.push_back({bytes, t});
  }
  const LinkFit f = fit_link(Collective::send_recv, 2, points);
  CHECK(f.busbw_bytes_per_s == doctest::Approx(125e6).epsilon(0.02));
  CHECK(f.residual > 0.05);  // the model does not describe the burst, and says so
}

TEST_CASE("fit never returns a negative latency or bandwidth") {
  // Pure bandwidth, no latency at all, plus noise that would pull the intercept below zero.
  std::vector<SizeTime> points = {{1e6, 0.9e-3}, {2e6, 2.1e-3}, {4e6, 3.9e-3}, {8e6, 8.1e-3}};
  LinkFit f = fit_link(Collective::send_recv, 2, points);
  CHECK(f.latency_s >= 0);
  CHECK(f.busbw_bytes_per_s == doctest::Approx(1e9).epsilon(0.05));
  // Times that shrink with size (noise at the latency floor): the best observed bandwidth.
  points = {{8, 10e-6}, {16, 10e-6}, {32, 9e-6}};
  f = fit_link(Collective::send_recv, 2, points);
  CHECK(f.busbw_bytes_per_s == doctest::Approx(32 / 9e-6));
  CHECK(f.latency_s >= 0);
  CHECK(f.latency_s < 10e-6);
  // Nothing usable.
  CHECK(fit_link(Collective::send_recv, 2, std::vector<SizeTime>{}).busbw_bytes_per_s == 0);
}

TEST_CASE("stragglers: slowest against the median, above the stated threshold") {
  std::vector<RankInfo> ranks(4);
  for (int r = 0; r < 4; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node" + std::to_string(r);
  }
  CHECK(kStragglerThreshold == doctest::Approx(1.2));
  std::vector<std::pair<int, double>> times = {{0, 1.0}, {1, 1.02}, {2, 0.98}, {3, 1.5}};
  auto flagged = find_stragglers("GEMM", times, ranks);
  REQUIRE(flagged.size() == 1);
  CHECK(flagged[0].rank == 3);
  CHECK(flagged[0].host == "node3");
  CHECK(flagged[0].median_s == doctest::Approx(1.01));
  CHECK(flagged[0].ratio == doctest::Approx(1.5 / 1.01));
  // Just under the threshold: not flagged; a tighter threshold flags it.
  times[3].second = 1.19 * 1.01;
  CHECK(find_stragglers("GEMM", times, ranks).empty());
  CHECK(find_stragglers("GEMM", times, ranks, 1.1).size() == 1);
  // One rank has nothing to compare with.
  CHECK(find_stragglers("GEMM", std::vector<std::pair<int, double>>{{0, 5.0}}, ranks).empty());
}

TEST_CASE("probe warnings: a fit that misses by more than 25% and an unmeasured tier are named") {
  Results r;
  r.groups = {{Tier::intra, 8, 8, 1, ""},
              {Tier::inter, 1, 1, 1, "a single node: no inter-node link to measure"},
              {Tier::world, 8, 8, 1, "a single node"}};
  FitResult fit;
  TierFit intra;
  intra.group = r.groups[0];
  LinkFit rough;
  rough.residual = 1.10;  // 110%, as a probe on a busy host printed without comment
  LinkFit fine;
  fine.residual = 0.04;
  intra.collectives = {{Collective::all_reduce, rough}, {Collective::all_gather, fine}};
  fit.tiers = {intra};
  const auto w = probe_warnings(r, fit);
  REQUIRE(w.size() == 2);  // the rough fit and the inter tier; not the good fit, not world
  CHECK(w[0].find("intra all_reduce fit misses the measured times by 110%") == 0);
  CHECK(w[1].find("inter not measured (a single node") == 0);
  CHECK(w[1].find("the preset's inter-node link") != std::string::npos);
}
