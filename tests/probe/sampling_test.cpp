// The probe at scale: node-pair rounds that cover every tier of the network within a bound, and
// the forecast said before the probe starts.
#include "sampling.hpp"

#include <doctest/doctest.h>

#include <set>

#include "fit.hpp"
#include "harness.hpp"

using namespace shardplan;
using namespace shardplan::probe;

TEST_CASE("pair rounds: disjoint pairs, at most the bound, every class the network has") {
  // 1,024 nodes of an NVL72 fabric: 18 nodes per NVLink domain, 72 per leaf.
  const NetworkShape net{1024, 18, 72};
  const auto rounds = plan_pair_rounds(net, 4);
  REQUIRE(rounds.size() == 4);
  std::set<PairClass> classes;
  for (const PairRound& r : rounds) {
    std::set<int> seen;
    for (size_t i = 0; i < r.pairs.size(); ++i) {
      const auto [a, b] = r.pairs[i];
      CHECK((a ^ r.offset) == b);
      CHECK(b < net.nodes);
      CHECK(seen.insert(a).second);  // each node at most once a round
      CHECK(seen.insert(b).second);
      CHECK(r.classes[i] == pair_class(net, a, b));
      classes.insert(r.classes[i]);
    }
  }
  CHECK(classes.count(PairClass::in_domain) == 1);
  CHECK(classes.count(PairClass::across_domains) == 1);
  CHECK(classes.count(PairClass::across_spine) == 1);
  // Node 0 and node 17 share a rack; 0 and 18 a leaf; 0 and 72 only the spine.
  CHECK(pair_class(net, 0, 17) == PairClass::in_domain);
  CHECK(pair_class(net, 0, 18) == PairClass::across_domains);
  CHECK(pair_class(net, 0, 72) == PairClass::across_spine);
  // One node: nothing to pair; two: one pair.
  CHECK(plan_pair_rounds({1, 1, 0}, 4).empty());
  const auto two = plan_pair_rounds({2, 1, 0}, 4);
  REQUIRE(two.size() == 1);
  CHECK(two[0].pairs.size() == 1);
  CHECK(plan_pair_rounds({1024, 18, 72}, 2).size() == 2);
}

TEST_CASE("the forecast: measurements and time grow with the node count, pairs included") {
  SweepPlan plan;
  plan.collectives = {Collective::all_reduce, Collective::all_gather};
  plan.min_bytes = 8;
  plan.max_bytes = 1u << 30;
  plan.settings.warmup = 5;
  plan.settings.iters = 20;
  plan.pair_bytes = 256u << 20;
  plan.gemms = {GemmShape{4096, 4096, 4096, MathDtype::bf16, "sweep"}};
  const double nvlink = 370e9, ib = 48e9 / 8;  // busbw per GPU: NVLink4, an NDR NIC per 8 GPUs
  const ProbeForecast one = forecast_probe(plan, {1, 1, 0}, 8, nvlink, ib, 2e-6, 10e-6);
  const ProbeForecast eight = forecast_probe(plan, {8, 1, 32}, 8, nvlink, ib, 2e-6, 10e-6);
  const ProbeForecast big = forecast_probe(plan, {1024, 1, 32}, 8, nvlink, ib, 2e-6, 10e-6);
  CHECK(one.pair_rows == 0);
  CHECK(eight.pair_rows > 0);
  CHECK(big.pair_rows >= 4 * 512 - 512);  // up to 512 pairs a round, 4 rounds
  CHECK(one.collective_rows < eight.collective_rows);
  CHECK(one.seconds < eight.seconds);
  CHECK(eight.seconds < big.seconds);
  CHECK(big.gemm_rows == 1);
  // The intra tier's 1 GiB all-reduce alone: 26 runs of 2 x 7/8 x 1 GiB at 370 GB/s = 0.13 s.
  const double intra_1gib = 26 * (2.0 * 7 / 8 * (1u << 30) / nvlink);
  CHECK(one.seconds > intra_1gib);
  CHECK(big.measurements() == big.collective_rows + big.pair_rows + big.gemm_rows + big.host_rows);
}

TEST_CASE("a slow link among node pairs is named against the pairs of its kind") {
  Results r;
  for (int n = 0; n < 8; ++n) {
    RankInfo info;
    info.rank = info.process = info.node = n;
    info.host = "node" + std::to_string(n);
    r.ranks.push_back(info);
  }
  r.groups = plan_groups(r.ranks);
  // Four pairs across the spine at 48 GB/s, one of them (nodes 2 and 6) at 20 GB/s.
  for (const auto& [a, b] : {std::pair{0, 4}, std::pair{1, 5}, std::pair{2, 6}, std::pair{3, 7}}) {
    PairRow p;
    p.offset = 4;
    p.node_a = p.rank_a = a;
    p.node_b = p.rank_b = b;
    p.host_a = "node" + std::to_string(a);
    p.host_b = "node" + std::to_string(b);
    p.where = to_string(PairClass::across_spine);
    p.bytes = 256u << 20;
    p.bytes_per_s = a == 2 ? 20e9 : 48e9;
    p.seconds = static_cast<double>(p.bytes) / p.bytes_per_s;
    r.pairs.push_back(p);
  }
  const FitResult fit = fit_results(r, GpuSpec{});
  REQUIRE(fit.stragglers.size() == 1);
  CHECK(fit.stragglers[0].host == "node2 <-> node6");
  CHECK(fit.stragglers[0].what.find("across the spine") != std::string::npos);
  CHECK(fit.stragglers[0].ratio == doctest::Approx(48.0 / 20.0));
}
