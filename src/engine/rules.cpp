// The plan rules as one table: divisibility and placement rules that hold for every stack, then
// the framework's capabilities (FrameworkCaps, from profiles/frameworks/*.json).
#include "shardplan/rules.hpp"

#include <algorithm>

#include "shardplan/plan.hpp"

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
bool tp_within_node(P p, C c) {
  return p.tp > c.cluster.gpus_per_node && !c.rules.allow_tp_across_nodes;
}

// A GPU without this dtype's tensor cores (fp8 on an A100). A cluster with no GPU profile at all
// (the probe checking a model's shapes) has nothing to say about precision.
bool precision_supported(P, C c) {
  const GpuSpec& g = c.cluster.gpu;
  const bool has_gpu = g.peak_flops[static_cast<int>(MathDtype::bf16)] > 0;
  return has_gpu && g.peak_flops[static_cast<int>(math_dtype(c.training.precision))] <= 0;
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
  return !has_shapes(c) && (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.interleave > 1);
}
bool tp_divides_heads(P p, C c) {
  return has_shapes(c) && c.model.heads % p.tp != 0;
}
bool tp_fits_kv_heads(P p, C c) {
  const ModelSpec& m = c.model;
  return has_shapes(c) && m.heads % p.tp == 0 && m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0;
}
bool tp_divides_ffn(P p, C c) {
  return has_shapes(c) && c.model.ffn_hidden % p.tp != 0;
}
bool pp_within_layers(P p, C c) {
  return has_shapes(c) && p.pp > c.model.layers;
}
bool interleave_equal_chunks(P p, C c) {
  return has_shapes(c) && p.interleave > 1 && p.pp <= c.model.layers &&
         c.model.layers % (p.pp * p.interleave) != 0;
}
bool interleave_needs_pp(P p, C) {
  return p.interleave > 1 && p.pp == 1;
}
bool interleave_micro_batches(P p, C c) {
  const int mb = micro_batches_per_step(c.training, p);
  return p.interleave > 1 && p.pp > 1 && mb > 0 && mb % p.pp != 0;
}
bool ep_needs_moe(P p, C c) {
  return p.ep > 1 && !c.model.is_moe();
}
bool ep_divides(P p, C c) {
  return p.ep > 1 && c.model.is_moe() && (c.model.experts % p.ep != 0 || (p.dp * p.cp) % p.ep != 0);
}

bool framework_zero_stage(P p, C c) {
  return !c.caps().has_zero(p.zero);
}
bool framework_zero_with_pp(P p, C c) {
  return p.pp > 1 && c.caps().has_zero(p.zero) && p.zero > c.caps().max_zero_with_pp;
}
bool framework_tp(P p, C c) {
  return p.tp > 1 && !c.caps().tensor_parallel;
}
bool framework_sequence_parallel(P p, C c) {
  return p.sequence_parallel && p.tp > 1 && !c.caps().sequence_parallel;
}
bool framework_pp(P p, C c) {
  return p.pp > 1 && c.caps().pipeline_schedules.empty();
}
// Virtual stages per device are what the interleaved 1F1B schedule runs (Narayanan et al. 2021
// Sec. 2.2.2); the plan has no other multi-chunk schedule yet.
bool framework_interleave(P p, C c) {
  return p.interleave > 1 && !c.caps().has_schedule(PipelineSchedule::interleaved);
}
bool framework_cp(P p, C c) {
  return p.cp > 1 && !c.caps().context_parallel;
}
bool framework_ep(P p, C c) {
  return p.ep > 1 && !c.caps().expert_parallel;
}
bool framework_fp8(P, C c) {
  return c.training.precision == Precision::fp8 && !c.caps().fp8;
}
bool framework_fp16(P, C c) {
  return c.training.precision == Precision::fp16 && !c.caps().fp16;
}
bool framework_tp_across_nodes(P p, C c) {
  return p.tp > c.cluster.gpus_per_node && c.rules.allow_tp_across_nodes &&
         !c.caps().tp_across_nodes;
}
bool framework_replicate_1d(P p, C c) {
  return c.caps().replicate_only_1d && p.zero == 0 &&
         (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1);
}

}  // namespace

const std::vector<Rule>& plan_rules() {
  static const std::vector<Rule> rules = {
      {RuleId::degrees_positive, degrees_positive},
      {RuleId::gpu_count, gpu_count},
      {RuleId::zero_stage, zero_stage},
      {RuleId::tp_within_node, tp_within_node},
      {RuleId::precision_supported, precision_supported},
      {RuleId::sequence_parallel_needs_tp, sequence_parallel_needs_tp},
      {RuleId::batch_split, batch_split},
      {RuleId::cp_divides_sequence, cp_divides_sequence},
      {RuleId::layer_shapes_needed, layer_shapes_needed},
      {RuleId::tp_divides_heads, tp_divides_heads},
      {RuleId::tp_fits_kv_heads, tp_fits_kv_heads},
      {RuleId::tp_divides_ffn, tp_divides_ffn},
      {RuleId::pp_within_layers, pp_within_layers},
      {RuleId::interleave_equal_chunks, interleave_equal_chunks},
      {RuleId::interleave_needs_pp, interleave_needs_pp},
      {RuleId::interleave_micro_batches, interleave_micro_batches},
      {RuleId::ep_needs_moe, ep_needs_moe},
      {RuleId::ep_divides, ep_divides},
      {RuleId::framework_zero_stage, framework_zero_stage},
      {RuleId::framework_zero_with_pp, framework_zero_with_pp},
      {RuleId::framework_tp, framework_tp},
      {RuleId::framework_sequence_parallel, framework_sequence_parallel},
      {RuleId::framework_pp, framework_pp},
      {RuleId::framework_interleave, framework_interleave},
      {RuleId::framework_cp, framework_cp},
      {RuleId::framework_ep, framework_ep},
      {RuleId::framework_fp8, framework_fp8},
      {RuleId::framework_fp16, framework_fp16},
      {RuleId::framework_tp_across_nodes, framework_tp_across_nodes},
      {RuleId::framework_replicate_1d, framework_replicate_1d},
  };
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
  for (RuleId id : {RuleId::precision_supported, RuleId::framework_fp8, RuleId::framework_fp16}) {
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

const char* to_string(RuleId r) {
  switch (r) {
    case RuleId::degrees_positive:
      return "degrees_positive";
    case RuleId::gpu_count:
      return "gpu_count";
    case RuleId::zero_stage:
      return "zero_stage";
    case RuleId::tp_within_node:
      return "tp_within_node";
    case RuleId::precision_supported:
      return "precision_supported";
    case RuleId::sequence_parallel_needs_tp:
      return "sequence_parallel_needs_tp";
    case RuleId::batch_split:
      return "batch_split";
    case RuleId::cp_divides_sequence:
      return "cp_divides_sequence";
    case RuleId::layer_shapes_needed:
      return "layer_shapes_needed";
    case RuleId::tp_divides_heads:
      return "tp_divides_heads";
    case RuleId::tp_fits_kv_heads:
      return "tp_fits_kv_heads";
    case RuleId::tp_divides_ffn:
      return "tp_divides_ffn";
    case RuleId::pp_within_layers:
      return "pp_within_layers";
    case RuleId::interleave_equal_chunks:
      return "interleave_equal_chunks";
    case RuleId::interleave_needs_pp:
      return "interleave_needs_pp";
    case RuleId::interleave_micro_batches:
      return "interleave_micro_batches";
    case RuleId::ep_needs_moe:
      return "ep_needs_moe";
    case RuleId::ep_divides:
      return "ep_divides";
    case RuleId::framework_zero_stage:
      return "framework_zero_stage";
    case RuleId::framework_zero_with_pp:
      return "framework_zero_with_pp";
    case RuleId::framework_tp:
      return "framework_tp";
    case RuleId::framework_sequence_parallel:
      return "framework_sequence_parallel";
    case RuleId::framework_pp:
      return "framework_pp";
    case RuleId::framework_interleave:
      return "framework_interleave";
    case RuleId::framework_cp:
      return "framework_cp";
    case RuleId::framework_ep:
      return "framework_ep";
    case RuleId::framework_fp8:
      return "framework_fp8";
    case RuleId::framework_fp16:
      return "framework_fp16";
    case RuleId::framework_tp_across_nodes:
      return "framework_tp_across_nodes";
    case RuleId::framework_replicate_1d:
      return "framework_replicate_1d";
  }
  return "";
}

}  // namespace shardplan
