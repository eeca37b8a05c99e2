// Exhaustive plan search: declared axes, their cartesian product, each plan checked against the
// frameworks' rules and evaluated with the memory and step-time models, a bounded top-K.
#pragma once

#include <array>
#include <vector>

#include "shardplan/plan.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

enum class Objective { time, cost, throughput };
const char* to_string(Objective o);
/// An objective as the ranking compares it: 12 significant digits, so plans whose times differ
/// only by the order of a floating-point sum tie, and the ranking's next keys (fewer degrees,
/// lower ZeRO stages) name the simpler plan.
double objective_key(double objective);
Objective parse_objective(const std::string& text, const std::string& field);

/// The axes. dp is derived: gpus / (tp x pp x cp).
struct SearchSpace {
  std::vector<int> tp, pp, cp, ep, zero, micro_batch, interleave;
  // Expert tensor parallel (ParallelPlan::etp): 0 splits each expert as tp does; an explicit
  // degree equal to tp is that same plan, so it is not a point of its own.
  std::vector<int> expert_tp = {0};
  std::vector<Schedule> schedule;
  // false: layers split evenly; true: the first and last virtual stage one layer lighter, the
  // embedding and the loss counted as a layer each (Llama 3 405B; Megatron-Core's
  // --account-for-embedding/loss-in-pipeline-split; torchtitan's *_stage_less_layers = 1).
  std::vector<bool> lighter_ends;
  std::vector<Recompute> recompute;
  // Under selective recompute, the module sets tried (ParallelPlan::recompute_modules; 0: the
  // framework's own selective recompute).
  std::vector<unsigned> recompute_modules = {0};
  /// (recompute, modules) points: selective once per module set, the others once.
  long long recompute_points() const;
  std::vector<bool> sequence_parallel;
  std::vector<Offload> offload = {Offload{}};  // none unless a rung or the user asks
  // EP all-to-alls hidden behind paired passes (ParallelPlan::moe_a2a_overlap): MoE only.
  std::vector<bool> moe_a2a_overlap = {false};
  // Hybrid sharding (ParallelPlan::dp_shard) as the GPUs one shard group spans: 0 shards over
  // all of dp; a scale-up domain or a host makes dp_shard = those GPUs / (tp x cp), so that the
  // gathers and reduce-scatters stay inside it and only the replicas' all-reduce crosses.
  std::vector<int> shard_gpus = {0};
  /// Points of the declared product that restrict_to() took out because the framework cannot
  /// run them, by the rule that refuses them: the search reports them with its own rejections.
  std::array<long long, kRules> refused{};
  /// Points in the cartesian product (before any rule is applied).
  long long size() const;
  /// Points restrict_to() took out (the sum of `refused`).
  long long refused_points() const;
  /// Whether `plan` is a point of this space: each of its degrees and settings a value of the
  /// matching axis, as run_group (search.cpp) builds a point from them. Every axis above is
  /// read here and in is_subspace_of; a new axis must be added to both.
  bool holds(const ParallelPlan& plan) const;
  /// Whether every point of this space is a point of `outer` (each axis a subset of its own).
  bool is_subspace_of(const SearchSpace& outer) const;
};

/// The divisors of `n` from 1 up to `max`, ascending: the degrees an axis of `n` can split into.
std::vector<int> divisors(long long n, long long max);

/// The Megatron-Core recompute module sets worth trying on this model (ParallelPlan::
/// recompute_modules), the kinds published recipes set: the norms and the expert activation of
/// a MoE (elementwise recompute only), the norms and up projections of multi-latent attention
/// (DeepSeek-V3 report Sec. 3.2.3), both together. Empty for a dense model without MLA.
std::vector<unsigned> recompute_module_sets(const ModelSpec& model);

/// Every axis at its full range for this model and cluster, as if the framework could run
/// everything (full_space without restrict_to).
SearchSpace all_axes(const ModelSpec& model, const TrainingSpec& training,
                     const ClusterSpec& cluster, const PlanRules& rules = {});

/// Narrows the axes to what the training's framework can run for this model (a point it cannot
/// is not a plan for it), counting the points each capability takes out in `space.refused` under
/// its rule. Context parallelism is taken as the training runs it (TrainingSpec::context_parallel).
void restrict_to(SearchSpace& space, const ModelSpec& model, const TrainingSpec& training);

/// Every axis at its full range for this model and cluster: tp up to a node (or all GPUs when
/// allowed), pp up to the layers (uneven stages allowed) and interleave dividing them, cp for
/// sequences of 8k and more, ep and expert tp (as tp, or 1) for mixture-of-experts models, ZeRO
/// 0-3, micro-batches dividing the per-rank batch, all recompute policies, sequence parallel on
/// and off, the pipeline schedules (1F1B / interleaved, ZB-H1, ZB-V, DualPipeV) and even or
/// lighter first and last stages; then restrict_to() the framework.
SearchSpace full_space(const ModelSpec& model, const TrainingSpec& training,
                       const ClusterSpec& cluster, const PlanRules& rules = {});

/// The search's `lighter_ends` layout for `chunks` = pp x interleave model chunks: the first
/// and last chunk one layer lighter (the embedding and the loss counted as a layer each:
/// Megatron-LM's --account-for-embedding/loss-in-pipeline-split). With `mtp_layers` MTP modules
/// on the last chunk, each counts as two more layers there, and the first chunk takes what the
/// middle ones leave. A split that does not exist, or that an uneven pp already gives, is left
/// for check_plan() to refuse, so each layout is visited once.
void set_lighter_ends(int layers, int chunks, ParallelPlan& p, int mtp_layers = 0);

/// One evaluated plan.
struct Candidate {
  ParallelPlan plan;
  double step_s = 0;
  double peak_bytes = 0;
  double exposed_comm_s = 0;
  double tokens_per_s = 0;
  double objective = 0;  // smaller is better (throughput is negated)
  // false: a plan over memory whose step the search did not price (only its peak is known;
  // price() fills the rest). Every plan that fits, and every least_memory, is priced.
  bool priced = true;
};

struct SearchResult {
  std::vector<Candidate> ranked;  // best first, at most top_k, ties broken by the plan's degrees
  long long evaluated = 0;        // points of the space visited (every rule checked)
  // Of those, the ones that passed the rules: their memory modelled (their step: priced).
  long long modelled = 0;
  long long feasible = 0;  // of those, the ones that fit
  std::array<long long, kRules> rejected{};  // by the first rule broken (rules.hpp)
  long long rejected_memory = 0;             // kept every rule, does not fit the device
  double seconds = 0;
  bool have_least_memory = false;
  Candidate least_memory;  // the plan that came closest to fitting, when none fits
  // With SearchOptions::keep_over_memory: every modelled plan that does not fit, in no order,
  // most of them unpriced.
  std::vector<Candidate> over_memory;
};

struct SearchOptions {
  Objective objective = Objective::time;
  int top_k = 10;
  int threads = 0;  // 0: all hardware threads
  PlanRules rules;
  /// Keep every modelled plan that does not fit (SearchResult::over_memory): with top_k
  /// unbounded, the search then holds all it modelled, and feasible_within answers a subspace
  /// as a search of it would.
  bool keep_over_memory = false;
};

SearchResult search(const ModelSpec& model, const TrainingSpec& training,
                    const ClusterSpec& cluster, const SearchSpace& space,
                    const SearchOptions& options);

/// The search of `sub` taken from a search of a larger space that kept every plan it modelled
/// (top_k unbounded, keep_over_memory): the feasible plans in the same order, the plan closest
/// to fitting, the points visited and modelled. The rejections by rule are not known here, so a
/// caller that needs them (no plan of `sub` passed the rules) searches `sub` itself.
/// `model`, `training`, `cluster` and `objective` are the search's: they price the plans over
/// memory that a tie for the closest to fitting needs.
SearchResult feasible_within(const SearchResult& every, const SearchSpace& sub,
                             const ModelSpec& model, const TrainingSpec& training,
                             const ClusterSpec& cluster, Objective objective);

/// Prices a plan the search left unpriced (Candidate::priced false): its step, exposed
/// communication, throughput and objective, as the search would have.
void price(const ModelSpec& model, const TrainingSpec& training, const ClusterSpec& cluster,
           Objective objective, Candidate& candidate);

}  // namespace shardplan
