// The probe at scale: which node pairs it measures (a bounded number of rounds chosen to cover
// every tier of the network: inside a scale-up domain, across domains under one leaf switch,
// across the spine), how many measurements the whole probe makes and how long it will take,
// said before it starts (sampling.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shardplan/probe.hpp"

namespace shardplan::probe {

/// Where a pair of nodes sits relative to each other.
enum class PairClass { in_domain, across_domains, across_spine };
const char* to_string(PairClass c);

PairClass pair_class(const NetworkShape& net, int a, int b);

/// One round: disjoint node pairs measured at once (node a's and node b's first GPU exchange
/// `bytes` both ways). Every node is in at most one pair of a round.
struct PairRound {
  int offset = 0;  // node i pairs with node i XOR offset
  std::vector<std::pair<int, int>> pairs;
  std::vector<PairClass> classes;  // per pair
};

/// At most `max_rounds` rounds (XOR offsets 1, 2, 4, ... below the node count), chosen so every
/// class the network has appears: the smallest offset inside a domain, the smallest across
/// domains, the smallest across leaves, then the largest; none on one node.
std::vector<PairRound> plan_pair_rounds(const NetworkShape& net, int max_rounds);

/// forecast_probe with explicit rounds (the harness's own, or none).
ProbeForecast forecast_with_rounds(const SweepPlan& plan, const NetworkShape& net,
                                   int gpus_per_node, double intra_bytes_per_s,
                                   double inter_bytes_per_s, double intra_step_s,
                                   double inter_step_s, const std::vector<PairRound>& rounds);

}  // namespace shardplan::probe
