// The plan rules as one table: divisibility and placement rules that hold for every stack, then
// the framework's capabilities (FrameworkCaps, from profiles/frameworks/*.json).
#include "shardplan/rules.hpp"

#include <algorithm>

#include "shardplan/error.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

using P = const ParallelPlan&;
using C = const RuleContext&;

bool has_shapes(C c) {
  return c.model.has_architecture();
}

bool degrees_positive(P p, C) {
  return p.dp < 1 || p.tp < 1 || p.pp < 1 || p.cp < 1 || p.ep < 1 || p.micro_batch < 1 ||
         p.interleave < 1;
}

bool gpu_count(P p, C c) {
  return p.gpus() != c.cluster.gpus;
}
bool zero_stage(P p, C) {
  return p.zero < 0 || p.zero > 3;
}
// "Node" in the rule's name is the scale-up domain: TP needs NVLink, not a shared host (a GB200
// NVL72 rack runs TP 8 across two 4-GPU trays, Megatron-Core's GB200 recipes).
bool tp_within_node(P p, C c) {
  return p.tp > c.cluster.domain_gpus() && !c.rules.allow_tp_across_nodes;
}

// A GPU without this dtype's tensor cores (fp8 on an A100). A cluster with no GPU profile at all
// (the probe checking a model's shapes) has nothing to say about precision.
bool precision_supported(P, C c) {
  const GpuSpec& g = c.cluster.gpu;
  // fp32 is every GPU's: a V100 (fp16 tensor cores, no bf16) is a GPU that refuses bf16.
  const bool has_gpu = g.peak_flops[static_cast<int>(MathDtype::fp32)] > 0 ||
                       g.peak_flops[static_cast<int>(MathDtype::bf16)] > 0;
  return has_gpu && g.peak_flops[static_cast<int>(c.training.recipe.gemm_dtype)] <= 0;
}
// A recipe whose block scaling this GPU generation's tensor cores lack (MXFP8 and NVFP4 need
// Blackwell: the recipe row's gpu_generations). A GPU profile naming no generation passes.
bool precision_generation(P p, C c) {
  const GpuSpec& g = c.cluster.gpu;
  return !precision_supported(p, c) && !g.generation.empty() &&
         !c.training.recipe.runs_on(g.generation);  // a GPU without the dtype at all: the above
}

bool sequence_parallel_needs_tp(P p, C) {
  return p.sequence_parallel && p.tp == 1;
}
bool batch_split(P p, C c) {
  return c.training.global_batch % (static_cast<long long>(p.dp) * p.micro_batch) != 0;
}
bool cp_divides_sequence(P p, C c) {
  return c.training.seq_len % p.cp != 0;
}
bool layer_shapes_needed(P p, C c) {
  return !has_shapes(c) && (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.interleave > 1 ||
                            p.first_stage_layers >= 0 || p.last_stage_layers >= 0);
}
bool tp_divides_heads(P p, C c) {
  return has_shapes(c) && c.model.heads % p.tp != 0;
}
// DeepSpeed-Ulysses trades the sequence split for a head split: each TP rank's query heads
// divide over the context-parallel ranks (deepspeed/sequence/layer.py asserts it).
bool ulysses_divides_heads(P p, C c) {
  return p.cp > 1 && c.training.context_parallel == ContextParallel::ulysses && has_shapes(c) &&
         c.model.heads % p.tp == 0 && (c.model.heads / p.tp) % p.cp != 0;
}
bool tp_fits_kv_heads(P p, C c) {
  const ModelSpec& m = c.model;
  return has_shapes(c) && m.heads % p.tp == 0 && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0;
}
bool tp_divides_ffn(P p, C c) {
  return has_shapes(c) && c.model.ffn_hidden % p.tp != 0;
}
// Megatron-Core's MambaMixer splits heads and groups over tensor parallelism (it asserts both
// divide); a gated DeltaNet splits its key heads (their value heads go with them); lightning
// attention splits the model's heads, which tp_divides_heads checks.
bool tp_divides_recurrent_heads(P p, C c) {
  const ModelSpec& m = c.model;
  if (!has_shapes(c) || p.tp == 1) return false;
  const bool mamba = m.mixer_layer_count(MixerKind::mamba2) > 0;
  return (mamba && (m.mamba.heads % p.tp != 0 || m.mamba.groups % p.tp != 0)) ||
         (m.is_hybrid() && m.linear.mixer == MixerKind::gated_deltanet &&
          m.linear.key_heads % p.tp != 0);
}
// A recurrent mixer's state runs along the whole sequence: split over ranks it needs its own
// exchange (Megatron-Core's MambaContextParallel trades heads for sequence by all-to-all), which
// is not priced here; ring attention is.
bool cp_over_recurrent_layers(P p, C c) {
  return p.cp > 1 && has_shapes(c) && c.model.has_recurrent_mixer();
}
bool pp_within_layers(P p, C c) {
  return has_shapes(c) && p.pp > c.model.layers;
}
bool stage_layout(P p, C c) {
  return has_shapes(c) && p.pp <= c.model.layers && !layout_splits(c.model.layers, p);
}
// Virtual stages asked for with --interleave (1F1B or interleaved) and no pipeline; another
// schedule without a pipeline is schedule_runs' to name.
bool interleave_needs_pp(P p, C) {
  const bool one_f_one_b =
      p.schedule == Schedule::one_f_one_b || p.schedule == Schedule::interleaved;
  return p.interleave > 1 && p.pp == 1 && one_f_one_b;
}
// Everything else the schedule needs (schedule_issue).
bool schedule_runs(P p, C c) {
  if (interleave_needs_pp(p, c)) return false;
  return schedule_issue(p, micro_batches_per_step(c.training, p)) != ScheduleIssue::none;
}
bool ep_needs_moe(P p, C c) {
  return p.ep > 1 && !c.model.is_moe();
}
// Megatron-Core's MoE parallel folding: with expert tp set, experts take ep x etp ranks out of
// tp x dp x cp, so ep may exceed dp x cp when etp < tp; without it, ep divides dp x cp.
bool ep_divides(P p, C c) {
  const ModelSpec& m = c.model;
  if (!m.is_moe() || (p.ep == 1 && p.etp == 0)) return false;
  if (m.experts % p.ep != 0) return true;
  if (p.etp == 0) return (p.dp * p.cp) % p.ep != 0;
  const long long ranks = static_cast<long long>(p.tp) * p.dp * p.cp;
  return ranks % (static_cast<long long>(p.ep) * p.etp) != 0;
}
bool offload_supported(P p, C c) {
  return p.offload.any() &&
         offload_problem(p, c.cluster, offload_support(c.caps())) != OffloadProblem::none;
}
bool expert_tp_needs_moe(P p, C c) {
  return p.etp > 0 && !c.model.is_moe();
}
bool expert_tp_divides_ffn(P p, C c) {
  return p.etp > 0 && c.model.is_moe() && c.model.ffn_hidden % p.etp != 0;
}
bool moe_overlap_needs_ep(P p, C c) {
  return p.moe_a2a_overlap && (p.ep <= 1 || !c.model.is_moe());
}
// Megatron-Core's combined 1F1B (validate_args at d98e8a64 for --overlap-moe-expert-parallel-
// comm): no full recompute, and with a pipeline only the interleaved schedule; and a step of
// one micro-batch has no second pass to pair with (paired_share is 0).
bool moe_overlap_pairs(P p, C c) {
  if (!p.moe_a2a_overlap) return false;
  if (p.recompute == Recompute::full) return true;  // torchtitan's DualPipeV refuses it too
  // Megatron-Core: "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm".
  if ((recomputed_modules(p) & bit(RecomputeModule::moe)) != 0) return true;
  if (p.schedule == Schedule::dualpipe_v) return false;  // pairs its own chunks
  return (p.pp > 1 && p.interleave < 2) || micro_batches_per_step(c.training, p) < 2;
}

// Megatron-Core's TransformerConfig.__post_init__: recompute_modules under selective
// granularity; mla_up_proj only with multi-latent attention; layernorm and moe_act not under
// FP8 delayed scaling. A module the model lacks (moe_act on a dense model) Megatron accepts and
// recomputes nothing; so does this.
bool recompute_modules_apply(P p, C c) {
  if (p.recompute_modules == 0) return false;
  if (p.recompute != Recompute::selective) return true;
  if ((p.recompute_modules & bit(RecomputeModule::mla_up_proj)) && !c.model.is_mla()) return true;
  const unsigned quantized_outputs = bit(RecomputeModule::layernorm) | bit(RecomputeModule::moe_act);
  return c.training.recipe.id == Precision::fp8_delayed &&
         (p.recompute_modules & quantized_outputs) != 0;
}

bool framework_zero_stage(P p, C c) {
  return !c.caps().has_zero(p.zero) || (p.ep > 1 && p.zero > c.caps().expert_parallel_max_zero);
}
bool framework_zero_with_pp(P p, C c) {
  return p.pp > 1 && c.caps().has_zero(p.zero) && p.zero > c.caps().max_zero_with_pp;
}
bool framework_tp(P p, C c) {
  return p.tp > 1 && !c.caps().tensor_parallel;
}
// Sequence parallelism as the stack runs it: not at all, or (torchtitan) always with tp > 1.
bool framework_sequence_parallel(P p, C c) {
  if (p.tp <= 1) return false;
  return p.sequence_parallel ? !c.caps().sequence_parallel : c.caps().sequence_parallel_always;
}
bool framework_pp(P p, C c) {
  return p.pp > 1 && c.caps().pipeline_schedules.empty();
}
// The schedule the plan runs (schedule_of: 1F1B with virtual stages is interleaved).
bool framework_schedule(P p, C c) {
  if (p.pp == 1) return false;
  const Schedule s = schedule_of(p);
  if (!c.caps().has_schedule(s)) return true;
  const auto& only = c.caps().interleaved_only_schedules;
  return p.interleave < 2 && std::find(only.begin(), only.end(), s) != only.end();
}
bool framework_stage_layout(P p, C c) {
  if (p.pp == 1 || (p.first_stage_layers < 0 && p.last_stage_layers < 0)) return false;
  switch (c.caps().stage_layout) {
    case FrameworkCaps::StageLayout::any:
      return false;
    case FrameworkCaps::StageLayout::none:
      return true;
    case FrameworkCaps::StageLayout::lighter: {
      if (!has_shapes(c) || !layout_splits(c.model.layers, p)) return false;
      const LayoutRest r = layout_rest(c.model.layers, p);
      const int others = r.chunks > 0 ? r.layers / r.chunks : 0;
      return p.first_stage_layers > others || p.last_stage_layers > others;
    }
  }
  return false;
}
bool framework_cp(P p, C c) {
  return p.cp > 1 && !c.caps().has_context_parallel(c.training.context_parallel);
}
bool framework_ep(P p, C c) {
  return p.ep > 1 && (!c.caps().shards_experts_of(c.model.model_type) ||
                      (p.tp > 1 && !c.caps().expert_parallel_with_tp));
}
bool framework_moe_overlap(P p, C c) {
  if (!p.moe_a2a_overlap) return false;
  const auto& on = c.caps().moe_a2a_overlap_schedules;
  return !c.caps().moe_a2a_overlap ||
         (!on.empty() && std::find(on.begin(), on.end(), schedule_of(p)) == on.end());
}
bool framework_moe_dispatcher(P, C c) {
  return c.model.is_moe() && !c.caps().has_dispatcher(c.training.moe_dispatcher);
}
// A loss compiled by torch.compile is priced only where the profile says what it holds
// (FrameworkPricing::compiled_logit_bytes: torchtitan).
bool framework_compiled_loss(P, C c) {
  return c.training.compiled_loss && c.training.framework.pricing.compiled_logit_bytes <= 0;
}
// CUDA graphs are priced only where the profile says what of the fixed costs they leave
// (FrameworkPricing::cuda_graph_*_fixed_share: Megatron-Core).
bool framework_cuda_graphs(P, C c) {
  return c.training.framework.pricing.fixed_share(c.training.cuda_graphs) <= 0;
}
bool framework_recompute_modules(P p, C c) {
  return p.recompute_modules != 0 && !c.caps().recompute_modules;
}
bool framework_fp8(P, C c) {
  return c.training.recipe.gemm_dtype == MathDtype::fp8 && !c.caps().fp8;
}
// A recipe the named framework does not run (the recipe row's frameworks, with sources).
bool framework_precision(P p, C c) {
  const FrameworkProfile& f = c.training.framework;
  return !f.name.empty() && !framework_fp8(p, c) && !c.training.recipe.runs_under(f.id);
}
bool framework_fp16(P, C c) {
  return c.training.precision == Precision::fp16 && !c.caps().fp16;
}
bool framework_bf16_pure(P, C c) {
  return c.training.precision == Precision::bf16_pure && !c.caps().bf16_pure;
}
bool framework_tp_across_nodes(P p, C c) {
  return p.tp > c.cluster.domain_gpus() && c.rules.allow_tp_across_nodes &&
         !c.caps().tp_across_nodes;
}
bool framework_replicate_1d(P p, C c) {
  return c.caps().replicate_only_1d && p.zero == 0 &&
         (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1);
}

// Shard ranks: the data-parallel ranks FSDP shards over (ZeRO 2-3); ZeRO 0-1 shards no weights.
bool framework_offload_shards(P p, C c) {
  const int shard_ranks = p.zero >= 2 ? p.shard_degree() : 1;
  return p.offload.any() && shard_ranks < c.caps().offload.min_shard_ranks;
}

// Offload of N layers' activations (offload.hpp activation_layers_problem).
bool framework_offload_layers(P p, C c) {
  return p.offload.activation_layers > 0 &&
         activation_layers_problem(p, fewest_stage_layers(c.model, p), c.caps().offload) !=
             ActivationLayersProblem::none;
}

// DeepEP's Buffer asserts on an EP group it has no config for (deep_ep/buffer.py
// get_dispatch_config: "Unsupported number of EP ranks"); Megatron-Core's flex dispatcher sizes
// its buffer from those configs for the expert-TP x EP group (moe/fused_a2a.py get_buffer).
bool deepep_group_size(P p, C c) {
  return c.training.moe_dispatcher == MoeDispatcher::deepep && c.model.is_moe() && p.ep > 1 &&
         !deepep_runs_group(p.ep * p.expert_tp());
}
// Hybrid sharding (ParallelPlan::dp_shard): a shard group that divides dp into 2 or more
// replicas and holds 2 or more ranks, over ZeRO-sharded state. A mixture of experts borrows its
// expert group from the shard group: torchtitan's parallel_dims.py asserts ep divides
// dp_shard x cp (expert tp = tp) or dp_shard x cp x tp (expert tp 1), and shards the experts
// over the rest (dp_shard_mod_ep), replicated like the dense weights across dp_replicate.
bool dp_shard_divides(P p, C c) {
  if (p.dp_shard == 0) return false;
  const bool expert_group_inside =
      !c.model.is_moe() || (p.dp_shard * p.cp * p.tp) % (p.ep * p.expert_tp()) == 0;
  return p.dp_shard < 2 || p.dp_shard >= p.dp || p.dp % p.dp_shard != 0 || p.zero < 1 ||
         !expert_group_inside;
}
// ZeRO-0 under a shard degree is dp_shard_divides' (nothing is sharded), not the framework's.
bool framework_hsdp(P p, C c) {
  return p.hybrid_shard() && p.zero >= 1 && !c.caps().has_hsdp(p.zero);
}

}  // namespace

// One row per rule, named once: its RuleId, its name (the id as written: the snake_case JSON and
// the counts print), the function above that asks it, and its scope.
#define SHARDPLAN_RULE(id, scope)         \
  Rule {                                  \
    RuleId::id, #id, id, RuleScope::scope \
  }

const std::vector<Rule>& plan_rules() {
  static const std::vector<Rule> rules = {
      SHARDPLAN_RULE(degrees_positive, pipeline),
      SHARDPLAN_RULE(gpu_count, pipeline),
      SHARDPLAN_RULE(zero_stage, zero),
      SHARDPLAN_RULE(tp_within_node, layout),
      SHARDPLAN_RULE(precision_supported, layout),
      SHARDPLAN_RULE(precision_generation, layout),
      SHARDPLAN_RULE(sequence_parallel_needs_tp, layout),
      SHARDPLAN_RULE(batch_split, pipeline),
      SHARDPLAN_RULE(cp_divides_sequence, layout),
      SHARDPLAN_RULE(layer_shapes_needed, pipeline),
      SHARDPLAN_RULE(tp_divides_heads, layout),
      SHARDPLAN_RULE(ulysses_divides_heads, layout),
      SHARDPLAN_RULE(tp_fits_kv_heads, layout),
      SHARDPLAN_RULE(tp_divides_ffn, layout),
      SHARDPLAN_RULE(tp_divides_recurrent_heads, layout),
      SHARDPLAN_RULE(cp_over_recurrent_layers, layout),
      SHARDPLAN_RULE(pp_within_layers, pipeline),
      SHARDPLAN_RULE(stage_layout, pipeline),
      SHARDPLAN_RULE(interleave_needs_pp, pipeline),
      SHARDPLAN_RULE(schedule_runs, pipeline),
      SHARDPLAN_RULE(ep_needs_moe, layout),
      SHARDPLAN_RULE(ep_divides, pipeline),
      SHARDPLAN_RULE(expert_tp_needs_moe, layout),
      SHARDPLAN_RULE(expert_tp_divides_ffn, layout),
      SHARDPLAN_RULE(moe_overlap_needs_ep, point),
      SHARDPLAN_RULE(moe_overlap_pairs, point),
      SHARDPLAN_RULE(recompute_modules_apply, point),
      SHARDPLAN_RULE(offload_supported, point),
      SHARDPLAN_RULE(framework_zero_stage, zero),
      SHARDPLAN_RULE(framework_zero_with_pp, zero),
      SHARDPLAN_RULE(framework_tp, layout),
      SHARDPLAN_RULE(framework_sequence_parallel, layout),
      SHARDPLAN_RULE(framework_pp, pipeline),
      SHARDPLAN_RULE(framework_schedule, pipeline),
      SHARDPLAN_RULE(framework_stage_layout, pipeline),
      SHARDPLAN_RULE(framework_cp, layout),
      SHARDPLAN_RULE(framework_ep, layout),
      SHARDPLAN_RULE(framework_moe_overlap, point),
      SHARDPLAN_RULE(framework_moe_dispatcher, layout),
      SHARDPLAN_RULE(framework_compiled_loss, layout),
      SHARDPLAN_RULE(framework_cuda_graphs, layout),
      SHARDPLAN_RULE(framework_recompute_modules, point),
      SHARDPLAN_RULE(framework_fp8, layout),
      SHARDPLAN_RULE(framework_fp16, layout),
      SHARDPLAN_RULE(framework_bf16_pure, layout),
      SHARDPLAN_RULE(framework_precision, layout),
      SHARDPLAN_RULE(framework_tp_across_nodes, layout),
      SHARDPLAN_RULE(framework_replicate_1d, point),
      SHARDPLAN_RULE(framework_offload_shards, point),
      SHARDPLAN_RULE(framework_offload_layers, point),
      SHARDPLAN_RULE(deepep_group_size, layout),
      SHARDPLAN_RULE(dp_shard_divides, point),
      SHARDPLAN_RULE(framework_hsdp, point),
  };
#undef SHARDPLAN_RULE
  // Rows are looked up by RuleId (to_string, check_inputs, first_broken): row i is rule i.
  static const bool in_order = [] {
    SHARDPLAN_CHECK(rules.size() == static_cast<size_t>(kRules),
                    "plan_rules() holds a row for every RuleId");
    for (size_t i = 0; i < rules.size(); ++i)
      SHARDPLAN_CHECK(static_cast<size_t>(rules[i].id) == i, "plan_rules() out of RuleId order");
    return true;
  }();
  (void)in_order;
  return rules;
}

std::vector<RuleProblem> check_plan(const ParallelPlan& p, const RuleContext& c) {
  std::vector<RuleProblem> out;
  for (const Rule& r : plan_rules()) {
    if (!r.broken(p, c)) continue;
    out.push_back({r.id, p});
    if (r.id == RuleId::degrees_positive) break;  // the other rules divide by the degrees
  }
  return out;
}

std::vector<RuleProblem> check_plan(const ModelSpec& m, const TrainingSpec& tr,
                                    const ParallelPlan& p, const ClusterSpec& c,
                                    const PlanRules& rules) {
  return check_plan(p, RuleContext{m, tr, c, rules});
}

std::vector<RuleProblem> check_inputs(const RuleContext& c) {
  std::vector<RuleProblem> out;
  ParallelPlan any;
  any.dp = c.cluster.gpus;
  for (RuleId id : {RuleId::precision_supported, RuleId::precision_generation,
                    RuleId::framework_fp8, RuleId::framework_fp16, RuleId::framework_bf16_pure,
                    RuleId::framework_precision, RuleId::framework_moe_dispatcher,
                    RuleId::framework_compiled_loss, RuleId::framework_cuda_graphs}) {
    if (plan_rules()[static_cast<size_t>(id)].broken(any, c)) out.push_back({id, any});
  }
  return out;
}

std::optional<RuleId> first_broken(const ParallelPlan& p, const RuleContext& c) {
  for (const Rule& r : plan_rules()) {
    if (r.broken(p, c)) return r.id;
  }
  return std::nullopt;
}

int first_broken_rule_of(RuleScope scope, const ParallelPlan& plan, const RuleContext& c) {
  SHARDPLAN_CHECK(scope != RuleScope::point, "point rules are asked per plan (first_broken)");
  const std::vector<Rule>& rules = plan_rules();
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].scope == scope && rules[i].broken(plan, c)) return static_cast<int>(i);
  }
  return kRules;
}

std::optional<RuleId> first_broken(const ParallelPlan& p, const RuleContext& c, int decided) {
  static const std::vector<Rule> point_rules = [] {
    std::vector<Rule> out;
    for (const Rule& r : plan_rules())
      if (r.scope == RuleScope::point) out.push_back(r);
    return out;
  }();
  for (const Rule& r : point_rules) {
    if (static_cast<int>(r.id) > decided) break;
    if (r.broken(p, c)) return r.id;
  }
  if (decided < kRules) return static_cast<RuleId>(decided);
  return std::nullopt;
}

int first_point_rule() {
  static const int first = [] {
    const std::vector<Rule>& rules = plan_rules();
    for (size_t i = 0; i < rules.size(); ++i)
      if (rules[i].scope == RuleScope::point) return static_cast<int>(i);
    return kRules;
  }();
  return first;
}

const char* to_string(RuleId r) {
  const auto i = static_cast<size_t>(r);
  return i < plan_rules().size() ? plan_rules()[i].name : "";
}

}  // namespace shardplan
