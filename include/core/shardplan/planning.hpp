// What `shardplan plan` runs for one cluster: the decision ladder walked in order and the
// exhaustive search, with the recommended (simplest sufficient) and the fastest plan picked out.
// `plan` prints one of these; `provision` builds one per (GPU type, count).
#pragma once

#include "shardplan/ladder.hpp"
#include "shardplan/search.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

struct PlanningRequest {
  SearchOptions search;  // objective, top-K, threads, rules
  double max_comm_share = 0.5;
};

struct PlanningResult {
  LadderResult ladder;
  SearchSpace space;
  SearchResult found;
  /// The rung the ladder stopped on (the recommended plan), or nullptr when no rung passes.
  const RungVerdict* recommended() const {
    return ladder.stop >= 0 ? &ladder.rungs[static_cast<size_t>(ladder.stop)] : nullptr;
  }
  /// The best plan the search ranked, or nullptr when none fits.
  const Candidate* fastest() const {
    return found.ranked.empty() ? nullptr : &found.ranked.front();
  }
};

/// Walks the ladder and searches the full space with the same rules and threads.
PlanningResult plan_cluster(const ModelSpec& model, const TrainingSpec& training,
                            const ClusterSpec& cluster, const PlanningRequest& request);

}  // namespace shardplan
