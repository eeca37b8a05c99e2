// The search's best plans ranked again by their simulated step: the closed forms (search.hpp)
// are the fast bound over millions of plans, the simulator (step_simulation.hpp) decides among
// the best few.
#pragma once

#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "shardplan/search.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// The plans one command has estimated with their simulated step (Simulation::figures), so
/// that each is simulated once: the re-ranks of the ladder's rungs and of the full search, and
/// the reports, look a plan up here before simulating it. Safe to share between threads.
class SimulatedPlans {
 public:
  /// The plan's estimate, or nullptr when it has not been estimated here.
  const Estimate* find(const ParallelPlan& plan) const;
  /// The plan's estimate: the one held, or `make()` run (outside the lock) and kept.
  template <class Make>
  const Estimate& get(const ParallelPlan& plan, Make make) {
    if (const Estimate* e = find(plan)) return *e;
    Estimate e = make();
    return add(plan, std::move(e));
  }

 private:
  const Estimate& add(const ParallelPlan& plan, Estimate e);
  mutable std::mutex mutex_;
  std::deque<std::pair<ParallelPlan, Estimate>> held_;  // a deque: references stay valid
};

/// Whether two plans are the same point (every degree and setting equal).
bool same_plan(const ParallelPlan& a, const ParallelPlan& b);

/// The search's ranking with its first `k` candidates ranked again by their simulated step:
/// the closed forms are the search's fast bound over millions of plans, the simulation decides
/// among the best. Their step_s, tokens_per_s and objective become the simulated ones. Returns
/// how many were simulated; the simulations run on `threads` threads (0: all cores). With
/// `estimates`, each simulated plan's whole estimate (Simulation::figures) is kept there in the
/// new order, so that a report shows those plans without simulating them again. With
/// `simulated`, a plan estimated there before is not simulated again, and each one simulated
/// here is kept there.
int rerank_by_simulation(const ModelSpec& model, const TrainingSpec& training,
                         const ClusterSpec& cluster, Objective objective, int k,
                         std::vector<Candidate>& ranked, int threads = 1,
                         std::vector<Estimate>* estimates = nullptr,
                         SimulatedPlans* simulated = nullptr);

/// Which of the search's best plans are simulated: those whose closed-form step is within
/// `within` of the best one's, at most `at_most`. Simulation and closed form differ by a few
/// percent where pipelines, sends and overlap matter (`shardplan validate` prints both for each
/// published run, `--cross-validate` both per source group), so a plan further behind
/// than 10% in closed form is not one the simulation lifts to first; 16 bounds the time
/// (about 1 ms a simulation on the largest plans, bench/plan_bench).
struct RerankRule {
  double within = 0.10;
  int at_most = 16;
};

/// What a re-rank did: how many plans it simulated of how many the search ranked, and whether
/// the simulated best is another plan than the closed forms' best.
struct Rerank {
  RerankRule rule;
  long long candidates = 0;  // plans the search found that fit
  int simulated = 0;
  bool changed = false;
  Candidate closed_form_best;       // the first plan before the re-rank, with its closed-form step
  double chosen_closed_form_s = 0;  // the plan now first: its closed-form step
  double chosen_simulated_s = 0;    // and its simulated one
};

/// Simulates the plans `rule` picks from the head of `ranked` (best first by closed form) and
/// ranks them again by their simulated step (rerank_by_simulation, on `threads` threads); with
/// `estimates`, the first Rerank::simulated plans' estimates in their new order.
Rerank rerank(const ModelSpec& model, const TrainingSpec& training, const ClusterSpec& cluster,
              Objective objective, const RerankRule& rule, long long candidates,
              std::vector<Candidate>& ranked, int threads = 1,
              std::vector<Estimate>* estimates = nullptr, SimulatedPlans* simulated = nullptr);

}  // namespace shardplan
