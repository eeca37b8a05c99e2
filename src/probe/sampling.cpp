// Node-pair rounds and the probe's forecast (sampling.hpp).
#include "sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "shapes.hpp"

namespace shardplan::probe {

const char* to_string(PairClass c) {
  switch (c) {
    case PairClass::in_domain:
      return "inside a scale-up domain";
    case PairClass::across_domains:
      return "across domains, one leaf";
    case PairClass::across_spine:
      return "across the spine";
  }
  return "";
}

PairClass pair_class(const NetworkShape& net, int a, int b) {
  const int d = std::max(1, net.nodes_per_domain);
  if (d > 1 && a / d == b / d) return PairClass::in_domain;
  if (net.nodes_per_leaf > 0 && a / net.nodes_per_leaf == b / net.nodes_per_leaf) {
    return PairClass::across_domains;
  }
  return PairClass::across_spine;
}

namespace {

PairRound round_of(const NetworkShape& net, int offset) {
  PairRound r;
  r.offset = offset;
  for (int a = 0; a < net.nodes; ++a) {
    const int b = a ^ offset;
    if (b <= a || b >= net.nodes) continue;
    r.pairs.emplace_back(a, b);
    r.classes.push_back(pair_class(net, a, b));
  }
  return r;
}

// The class most of a round's pairs have.
PairClass main_class(const PairRound& r) {
  int count[3] = {0, 0, 0};
  for (PairClass c : r.classes) ++count[static_cast<int>(c)];
  return static_cast<PairClass>(std::max_element(count, count + 3) - count);
}

}  // namespace

std::vector<PairRound> plan_pair_rounds(const NetworkShape& net, int max_rounds) {
  std::vector<PairRound> candidates;
  for (int offset = 1; offset < net.nodes; offset *= 2) {
    PairRound r = round_of(net, offset);
    if (!r.pairs.empty()) candidates.push_back(std::move(r));
  }
  std::vector<int> chosen;  // indices into candidates
  auto take = [&](size_t i) {
    if (static_cast<int>(chosen.size()) >= max_rounds) return;
    if (std::find(chosen.begin(), chosen.end(), static_cast<int>(i)) == chosen.end()) {
      chosen.push_back(static_cast<int>(i));
    }
  };
  // The smallest offset of each class, then the largest offset, then the rest from the top.
  for (PairClass c : {PairClass::in_domain, PairClass::across_domains, PairClass::across_spine}) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (main_class(candidates[i]) == c) {
        take(i);
        break;
      }
    }
  }
  for (size_t i = candidates.size(); i-- > 0;) take(i);
  std::sort(chosen.begin(), chosen.end());
  std::vector<PairRound> out;
  out.reserve(chosen.size());
  for (int i : chosen) out.push_back(candidates[static_cast<size_t>(i)]);
  return out;
}

ProbeForecast forecast_probe(const SweepPlan& plan, const NetworkShape& net, int gpus_per_node,
                             double intra_bytes_per_s, double inter_bytes_per_s,
                             double intra_step_s, double inter_step_s) {
  const auto rounds = plan.max_pair_rounds > 0 && plan.pair_bytes > 0 && net.nodes > 1
                          ? plan_pair_rounds(net, plan.max_pair_rounds)
                          : std::vector<PairRound>{};
  return forecast_with_rounds(plan, net, gpus_per_node, intra_bytes_per_s, inter_bytes_per_s,
                              intra_step_s, inter_step_s, rounds);
}

ProbeForecast forecast_with_rounds(const SweepPlan& plan, const NetworkShape& net,
                                   int gpus_per_node, double intra_bytes_per_s,
                                   double inter_bytes_per_s, double intra_step_s,
                                   double inter_step_s, const std::vector<PairRound>& rounds) {
  const size_t pair_bytes = plan.pair_bytes;
  ProbeForecast f;
  const Settings& s = plan.settings;
  const int runs = 1 + s.warmup + s.iters;  // the correctness run, warm-up, timed
  std::vector<RankInfo> ranks;
  for (int n = 0; n < net.nodes; ++n) {
    for (int l = 0; l < gpus_per_node; ++l) {
      RankInfo r;
      r.rank = r.process = static_cast<int>(ranks.size());
      r.node = n;
      r.local_rank = l;
      ranks.push_back(r);
    }
  }
  for (const GroupInfo& g : plan_groups(ranks)) {
    if (!g.skipped.empty()) continue;
    const double bw = g.tier == Tier::intra ? intra_bytes_per_s : inter_bytes_per_s;
    const double step = g.tier == Tier::intra ? intra_step_s : inter_step_s;
    int rows = 0;
    double seconds = 0;
    for (Collective c : plan.collectives) {
      size_t last = 0;
      for (size_t bytes = plan.min_bytes; bytes <= plan.max_bytes; bytes *= 2) {
        const CollectiveShape shape = shape_of(c, bytes, g.ranks);
        if (shape.bytes == 0 || shape.bytes == last) continue;
        last = shape.bytes;
        ++rows;
        seconds += runs * (step * info(c).latency_steps(g.ranks) +
                           static_cast<double>(shape.bytes) * info(c).bus_factor(g.ranks) / bw);
      }
    }
    f.collective_rows += rows;
    f.seconds += seconds;
    f.lines.push_back(fmt::format("{} tier ({} ranks a group): {} collective sizes, ~{:.0f} s",
                                  to_string(g.tier), g.ranks, rows, seconds));
  }
  double pair_seconds = 0;
  for (const PairRound& r : rounds) {
    f.pair_rows += static_cast<int>(r.pairs.size());
    pair_seconds += runs * (inter_step_s + static_cast<double>(pair_bytes) / inter_bytes_per_s);
  }
  if (!rounds.empty()) {
    f.seconds += pair_seconds;
    std::set<PairClass> classes;
    for (const PairRound& r : rounds) classes.insert(r.classes.begin(), r.classes.end());
    std::string which;
    for (PairClass c : classes) which += (which.empty() ? "" : ", ") + std::string(to_string(c));
    f.lines.push_back(
        fmt::format("node pairs: {} rounds of disjoint pairs, {} pairs ({}), "
                    "~{:.0f} s",
                    rounds.size(), f.pair_rows, which, pair_seconds));
  }
  f.gemm_rows = static_cast<int>(plan.gemms.size());
  const double gemm_seconds =
      static_cast<double>(f.gemm_rows) * (plan.gemm_warmup_s + plan.gemm_budget_s);
  f.seconds += gemm_seconds;
  if (f.gemm_rows > 0) {
    f.lines.push_back(
        fmt::format("GEMMs: {} shapes, ~{:.0f} s (every GPU at once)", f.gemm_rows, gemm_seconds));
  }
  if (plan.host) {
    f.host_rows = 2 * static_cast<int>(plan.host_link_bytes.size()) + 2;
    const double host_seconds = f.host_rows * 1.0;  // ~1 s each: warm-up and timed copies
    f.seconds += host_seconds;
    f.lines.push_back(fmt::format("host links and CPU memory: {} measurements, ~{:.0f} s",
                                  f.host_rows, host_seconds));
  }
  return f;
}

}  // namespace shardplan::probe
