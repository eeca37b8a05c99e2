// What `shardplan plan` runs for one cluster: the decision ladder walked in order and the
// exhaustive search, with the recommended (simplest sufficient) and the fastest plan picked out.
// `plan` prints one of these; `provision` builds one per (GPU type, count).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "shardplan/ladder.hpp"
#include "shardplan/rerank.hpp"
#include "shardplan/search.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

struct PlanningRequest {
  SearchOptions search;  // objective, top-K, threads, rules
  double max_comm_share = 0.5;
  RerankRule rerank;  // which of the search's best plans are simulated and ranked again
};

struct PlanningResult {
  LadderResult ladder;
  SearchSpace space;
  SearchResult found;
  /// The search's best plans ranked again by simulation: the closed forms are the search's
  /// fast bound, the simulated step decides among the best (found.ranked is in that order).
  Rerank rerank;
  /// Everything the reports show of the plans they name, estimated here once (renderers run
  /// no model): the recommended plan, the fastest, and each ranked plan in order.
  std::optional<Estimate> recommended_estimate;
  std::optional<Estimate> fastest_estimate;
  std::vector<Estimate> ranked_estimates;
  /// Every plan this planning simulated, each once (the rungs' re-ranks, the search's, the
  /// reports'); null: none kept.
  std::shared_ptr<SimulatedPlans> simulated;
  /// The fastest plan's advantage is inside the recommended plan's validation interval: the
  /// model cannot tell them apart, so the simpler plan stays preferred.
  bool advantage_inside_interval = false;
  /// The rung the ladder stopped on (the recommended plan), or nullptr when no rung passes.
  const RungVerdict* recommended() const {
    return ladder.stop >= 0 ? &ladder.rungs[static_cast<size_t>(ladder.stop)] : nullptr;
  }
  /// The best plan the search ranked, or nullptr when none fits.
  const Candidate* fastest() const {
    return found.ranked.empty() ? nullptr : &found.ranked.front();
  }
};

/// Fills the estimates and the interval decision from the ladder and the ranking as they
/// stand; call again after changing either (a second search, the ranking cut to --top). The
/// ranked plans are estimated on `threads` threads (SearchOptions::threads: 0 = all cores),
/// except those whose estimates ranked_estimates already holds in ranking order (the re-rank's,
/// which search_space keeps): each shown plan is simulated once.
void estimate_shown(PlanningResult& result, const ModelSpec& model, const TrainingSpec& training,
                    const ClusterSpec& cluster, int threads);

/// Searches `result.space` into `result.found` and ranks its best plans again by simulation
/// (`result.rerank`), keeping request.search.top_k of them and, in `result.ranked_estimates`,
/// the estimates of those the re-rank simulated.
void search_space(PlanningResult& result, const ModelSpec& model, const TrainingSpec& training,
                  const ClusterSpec& cluster, const PlanningRequest& request);

/// Walks the ladder and searches the full space with the same rules and threads.
PlanningResult plan_cluster(const ModelSpec& model, const TrainingSpec& training,
                            const ClusterSpec& cluster, const PlanningRequest& request);

}  // namespace shardplan
