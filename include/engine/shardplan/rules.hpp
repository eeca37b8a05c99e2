// The plan rules, once: a table of (rule, predicate over a plan and its context). `estimate`,
// the search, the ladder and `emit` all ask this table whether a plan can run, so they cannot
// disagree. The framework's capabilities are rules of the same table. Problems are values; the
// edge (rule_words.hpp) turns them into flags and sentences.
#pragma once

#include <optional>
#include <vector>

#include "shardplan/framework.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

enum class RuleId {
  degrees_positive,            // every degree and the micro-batch at least 1
  gpu_count,                   // dp x tp x pp x cp equals the cluster's GPUs
  zero_stage,                  // ZeRO stage 0-3
  tp_within_node,              // tp inside a scale-up domain unless allowed to cross
  precision_supported,         // the GPU has tensor cores for the precision
  precision_generation,        // the GPU's generation runs the recipe (MXFP8 / NVFP4: Blackwell)
  sequence_parallel_needs_tp,  // sequence parallel splits TP regions
  batch_split,                 // global batch = dp x micro-batch x accumulation
  cp_divides_sequence,         // context parallel divides the sequence
  layer_shapes_needed,         // tp / pp / cp / interleave need the architecture
  tp_divides_heads,
  ulysses_divides_heads,  // Ulysses context parallel splits each TP rank's heads
  tp_fits_kv_heads,       // tp divides the KV heads or is a multiple of them
  tp_divides_ffn,
  tp_divides_recurrent_heads,  // tp divides a Mamba-2's heads and groups, a DeltaNet's key heads
  cp_over_recurrent_layers,    // context parallel only over softmax attention (not modelled else)
  pp_within_layers,
  stage_layout,  // layers split into the virtual stages (first/last counts, the rest even)
  interleave_needs_pp,
  schedule_runs,  // the schedule's chunks per device and micro-batches (schedule.hpp)
  ep_needs_moe,
  ep_divides,           // ep divides the experts and dp x cp (ep x expert tp: tp x dp x cp)
  expert_tp_needs_moe,  // --expert-tp splits experts
  expert_tp_divides_ffn,
  moe_overlap_needs_ep,  // hiding all-to-alls needs expert parallel all-to-alls
  moe_overlap_pairs,     // ... and passes to pair: 2+ micro-batches, no full recompute, chunks
  // --recompute-modules: under selective recompute, on a model that has them, not with the
  // delayed-scaling FP8 recipe for layernorm / moe_act (Megatron-Core's TransformerConfig)
  recompute_modules_apply,
  offload_supported,  // the framework offloads this, and the cluster gives host facts (offload.hpp)
  // the framework's capabilities
  framework_zero_stage,
  framework_zero_with_pp,
  framework_tp,
  framework_sequence_parallel,
  framework_pp,
  framework_schedule,      // the framework runs this pipeline schedule
  framework_stage_layout,  // the framework sets first/last stage layer counts
  framework_cp,
  framework_ep,
  framework_moe_overlap,        // the framework overlaps EP all-to-alls with paired passes
  framework_moe_dispatcher,     // the framework runs the training's MoE dispatcher
  framework_compiled_loss,      // the framework's profile prices a compiled loss (--compiled-loss)
  framework_cuda_graphs,        // the framework's profile prices CUDA graphs (--cuda-graphs)
  framework_recompute_modules,  // the framework recomputes Megatron-Core's modules by name
  framework_fp8,
  framework_fp16,
  framework_bf16_pure,  // the framework trains without an fp32 master copy
  framework_precision,  // the framework runs the precision recipe
  framework_tp_across_nodes,
  framework_replicate_1d,
  framework_offload_shards,  // offload applies only with weights sharded over enough ranks
  framework_offload_layers,  // the framework offloads N layers' activations, under its limits
  deepep_group_size,  // DeepEP has a dispatch/combine config for the EP x expert-TP group size
  // hybrid sharding: a shard group of 2 .. dp-1 ranks dividing dp, ZeRO 1-3, a dense model
  dp_shard_divides,
  framework_hsdp,  // the framework runs hybrid sharding at this ZeRO stage
};
inline constexpr int kRules = 53;
/// A short snake_case name for JSON and counts ("tp_divides_heads").
const char* to_string(RuleId r);

/// What the user allows beyond the defaults.
struct PlanRules {
  bool allow_tp_across_nodes = false;
};

/// What a rule reads besides the plan.
struct RuleContext {
  const ModelSpec& model;
  const TrainingSpec& training;
  const ClusterSpec& cluster;
  PlanRules rules;
  const FrameworkCaps& caps() const { return training.framework.caps; }
};

/// One broken rule: which one, and the plan it was found in (the edge words it from both).
struct RuleProblem {
  RuleId rule;
  ParallelPlan plan;
};

/// What a rule reads of the plan. layout: only the degrees the search groups its points by
/// (tp, cp, ep, expert tp, micro-batch, sequence parallel), so the search asks it once per
/// group; pipeline: those and the pipeline the search fixes next (pp and with it dp, virtual
/// stages, schedule, lighter end stages), so it asks once per pipeline; zero: those and the ZeRO
/// stage, asked once per stage of a pipeline; point: anything else as well (recompute, offload,
/// all-to-all overlap, shard group ...).
enum class RuleScope { point, zero, pipeline, layout };

struct Rule {
  RuleId id;
  const char* name;  // to_string(id): snake_case, as JSON and the counts print it
  bool (*broken)(const ParallelPlan& plan, const RuleContext& context);
  RuleScope scope = RuleScope::point;
};

/// Every rule in the order they are checked. The first one guards the rest: when a degree is
/// below 1, no other rule is asked.
const std::vector<Rule>& plan_rules();

/// Every rule the plan breaks (empty when it can run).
std::vector<RuleProblem> check_plan(const ParallelPlan& plan, const RuleContext& context);

/// The first rule the plan breaks, in table order, or nothing: what the search counts.
std::optional<RuleId> first_broken(const ParallelPlan& plan, const RuleContext& context);

/// The first rule of `scope` (layout, pipeline or zero) `plan` breaks, as its index in plan_rules()
/// (kRules: none). Reads only what that scope reads (RuleScope), so one answer holds for every
/// plan sharing those fields.
int first_broken_rule_of(RuleScope scope, const ParallelPlan& plan, const RuleContext& context);

/// first_broken(plan, context) for a plan whose layout, pipeline and zero rules were answered
/// ahead: `decided` is the smallest of those first_broken_rule_of answers. The point rules are
/// asked in table order and the decided rule stands in its place, so the answer is the same rule.
std::optional<RuleId> first_broken(const ParallelPlan& plan, const RuleContext& context,
                                   int decided);

/// The index in plan_rules() of the first point-scope rule. A plan whose decided rule (above)
/// comes before it breaks that rule first, whatever its point fields: the search counts such a
/// ZeRO stage's points without visiting them.
int first_point_rule();

/// The rules no plan can keep because they are about the inputs alone (fp8 on an A100, a
/// precision the framework lacks): `plan` refuses these up front as `estimate` does.
std::vector<RuleProblem> check_inputs(const RuleContext& context);

/// check_plan with the context spelled out.
std::vector<RuleProblem> check_plan(const ModelSpec& model, const TrainingSpec& training,
                                    const ParallelPlan& plan, const ClusterSpec& cluster,
                                    const PlanRules& rules = {});

}  // namespace shardplan
