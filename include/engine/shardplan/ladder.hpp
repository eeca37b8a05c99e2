// The decision ladder, walked in order: one GPU, gradient accumulation, offload (one GPU), ZeRO-1,
// ZeRO-2, [expert parallel: mixture of experts only], ZeRO-3, tensor parallel (inside a node),
// pipeline parallel (across nodes). Each rung is a restricted search; the walk stops at the first
// rung whose best plan fits in memory and whose exposed communication the interconnect can carry,
// unless a later rung's passing plan is much faster (LadderOptions::climb_speedup).
#pragma once

#include <optional>
#include <vector>

#include "shardplan/rules.hpp"
#include "shardplan/search.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/rerank.hpp"

namespace shardplan {

enum class Rung {
  single_gpu,
  gradient_accumulation,
  // One GPU only: optimizer states (and weights, activation checkpoints) in host memory. With more
  // GPUs, ZeRO shards the same states across them for less than the PCIe round trip costs.
  offload,
  zero_1,
  zero_2,
  zero_3,
  tensor_parallel,
  pipeline_parallel,
  // Mixture of experts only: experts spread over ep ranks, tokens sent to them by all-to-all,
  // with any tensor, pipeline and ZeRO degree beside (every published MoE recipe runs EP 8-64).
  // Walked after ZeRO-2 (ladder_order): last in this enum only so that the names keep their
  // numbers.
  expert_parallel,
};
inline constexpr int kRungs = 9;
const char* to_string(Rung r);

/// The rungs in the order the walk climbs them for this model on `gpus` GPUs. A mixture of
/// experts tries expert parallelism right after ZeRO-1/2, before ZeRO-3, tensor and pipeline
/// parallelism: ZeRO-3 gathers every expert on every pass (traffic that grows with all the
/// parameters, many times the ones a token uses), and tensor parallelism cuts each expert's
/// GEMMs, where EP moves only the tokens and keeps each expert's GEMM whole (Megatron-Core's
/// MoE guide, "Tuning Guide of Parallel Mappings": prefer EP over TP for the expert layer).
/// Offload is a rung on one GPU only.
std::vector<Rung> ladder_order(const ModelSpec& model, int gpus);

/// What stops a rung, most specific first.
enum class Blocker {
  none,
  no_valid_plan,    // no plan of this shape can run (batch split, node size, divisibility)
  gathered_layer,   // one layer's weights, gathered, exceed the device (ZeRO-3's limit)
  optimizer_state,  // the optimizer state alone exceeds the device
  weights,          // the weights alone exceed the device
  model_states,     // weights + gradients + optimizer state together exceed it
  activations,    // states fit, activations do not, at the smallest micro-batch and full recompute
  communication,  // fits, but exposed communication is over the threshold
  host_memory,    // offload: the node's host memory cannot hold what its GPUs keep there
};
const char* to_string(Blocker b);

struct RungVerdict {
  Rung rung = Rung::single_gpu;
  bool fits = false;
  bool comm_ok = false;
  bool passes() const { return fits && comm_ok; }
  Blocker blocker = Blocker::none;
  double need_bytes = 0;    // the blocking item's size on one device; 0 unless memory blocks
  double memory_bytes = 0;  // peak per device of the plan shown
  double capacity_bytes = 0;
  double comm_share = 0;       // exposed communication / step of the plan shown
  bool crosses_nodes = false;  // some traffic leaves the scale-up domain (hidden or not)
  bool has_plan = false;
  Candidate plan;  // the fastest passing plan; else the best fitting; else least memory
  long long evaluated = 0;
  std::optional<RuleId> top_rule;  // no_valid_plan: the rule that refused most of its plans
  double batch_per_gpu = 0;        // no_valid_plan: the global batch / GPUs (1.5: no split)
  double offload_s = 0;            // offload rung: what offload adds to the plan's step
  double without_offload_s = 0;    // the same plan's step without offload (which does not fit)
  double without_offload_bytes = 0;
};

struct LadderOptions {
  /// Exposed communication above this share of the step is more than the interconnect can
  /// carry: past half the step, most of the cluster's time is spent waiting on the network.
  double max_comm_share = 0.5;
  /// A later rung whose passing plan is this many times faster than the first passing rung's is
  /// recommended instead: a plan 1.5x slower wastes a third of the cluster, a gap far outside
  /// every framework's validation interval (held-out errors stay under 25%). DeepSpeed's ZeRO-3
  /// on 512 A100s passes at 70 s where its 3D plan takes 35 s.
  double climb_speedup = 1.5;
  PlanRules rules;
  int threads = 0;
  /// Each rung's best plans are ranked again by simulation before the rung picks one.
  RerankRule rerank;
  /// A search of a space that holds the rungs' spaces, with every modelled plan kept (top_k
  /// unbounded, keep_over_memory) and with these rules: a rung within `searched_space` takes its
  /// plans from it instead of searching again (the rungs' answers are the same; plan_cluster
  /// searches once).
  const SearchResult* searched = nullptr;
  const SearchSpace* searched_space = nullptr;
  /// The command's simulated plans: a rung's re-rank simulates only plans not already there.
  SimulatedPlans* simulated = nullptr;
};

struct LadderResult {
  std::vector<RungVerdict> rungs;  // walked in order, up to and including the stop
  int stop = -1;                   // index of the rung recommended; -1 if none passes
  int first_pass = -1;  // the first rung that passes; differs from stop when the walk climbed
  double climb_speedup = 0;
  double max_comm_share = 0;
  // A mixture of experts (the walk tried expert parallelism before ZeRO-3): its parameter counts,
  // for the reason the ladder gives. 0 for a dense model.
  double moe_total_params = 0;
  double moe_active_params = 0;
};

LadderResult walk_ladder(const ModelSpec& model, const TrainingSpec& training,
                         const ClusterSpec& cluster, const LadderOptions& options = {});

/// The restricted search space of one rung.
SearchSpace rung_space(Rung rung, const ModelSpec& model, const TrainingSpec& training,
                       const ClusterSpec& cluster, const PlanRules& rules);

}  // namespace shardplan
