// Before provisioning: for each GPU type and count, what `plan` would run (recommended and
// fastest), how long training takes and what it costs; the Pareto frontier of time vs cost and
// the best option under a deadline and a budget.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardplan/planning.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// One GPU type on offer: its cluster (node fabric and scale-out from its profile; `gpus` is set
/// per count) and the price of one GPU-hour.
struct GpuOffer {
  ClusterSpec cluster;
  double gpu_hour_cost = 0;
  std::string price_source;  // the profile's list-price source, or "--gpu-hour-cost"
};

enum class ProvisionObjective { time, cost };

struct ProvisionRequest {
  std::vector<GpuOffer> offers;
  std::vector<int> counts;  // GPUs, ascending
  /// Each (GPU type, count) planned as `plan` plans it, with a shorter re-rank: the grid plans
  /// a hundred clusters, and re-ranking 4 plans instead of 16 keeps it within half again of
  /// its closed-form time (bench/provision_bench: 4.1 s closed forms only, 5.9 s with 4, 10.3 s
  /// with 16, for a 70B model over 90 options on one core).
  PlanningRequest planning = {
      .search = {}, .max_comm_share = 0.5, .rerank = {.within = 0.10, .at_most = 4}};
  ProvisionObjective objective = ProvisionObjective::cost;
  double deadline_s = 0;  // 0: none
  double budget = 0;      // 0: none
  /// Called after each (GPU, count) is planned, with how many are done of how many.
  std::function<void(size_t done, size_t total)> on_progress;
};

/// One (GPU type, count). `fits` is false when no plan fits the device memory.
struct ProvisionOption {
  std::string gpu;
  int gpus = 0;
  ClusterSpec cluster;
  TrainingSpec training;
  bool fits = false;
  ParallelPlan plan;  // the fastest plan the search found (the one priced below)
  Estimate estimate;  // of that plan: step time, MFU, memory, time to train, GPU-hours, cost
  bool has_recommended = false;
  ParallelPlan recommended;  // the ladder's simplest sufficient plan
  Rung recommended_rung = Rung::single_gpu;
  double recommended_step_s = 0;
  double headroom_bytes = 0;  // device capacity minus the fastest plan's peak
  bool pareto = false;        // no other option is both faster and cheaper
  bool meets_deadline = true;
  bool within_budget = true;
  double step_s() const { return estimate.step_s; }
  double time_to_train_s() const { return estimate.train_s; }
  double cost() const { return estimate.train_cost; }
};

struct ProvisionResult {
  std::vector<ProvisionOption> options;  // sorted by the objective; options that fit first
  std::optional<size_t> best;            // meets the deadline and budget, best by the objective
  std::optional<size_t> fastest;         // of the options that fit, the shortest time to train
  std::optional<size_t> cheapest;        // of the options that fit, the lowest cost
  double seconds = 0;
};

/// Plans every (offer, count); training.tokens must be set (time to train needs it). Every option
/// trains the same run: without a global batch (0), it is `plan`'s default at the largest count,
/// one sequence per GPU there, and the same for the smaller counts (more accumulation).
ProvisionResult provision(const ModelSpec& model, const TrainingSpec& training,
                          const ProvisionRequest& request);

/// Marks each option that fits and that no other fitting option dominates in both time to train
/// and cost (ties in both keep both).
void mark_pareto(std::vector<ProvisionOption>& options);

const char* to_string(ProvisionObjective o);

}  // namespace shardplan
