// Flags and sentences for the plan rules (rules.hpp); the engine only returns which rule broke.
#include "shardplan/rule_words.hpp"

#include <fmt/format.h>

#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"

namespace shardplan {
namespace {

std::string stack(const RuleContext& c) {
  const FrameworkProfile& f = c.training.framework;
  return f.name.empty() ? std::string("the stack") : f.name;
}

std::string zero_list(const FrameworkCaps& caps) {
  std::string s;
  for (int z : caps.zero_stages) s += (s.empty() ? "" : ", ") + std::to_string(z);
  return s;
}

PlanProblem framework_words(const RuleProblem& r, const RuleContext& c) {
  const ParallelPlan& p = r.plan;
  const FrameworkCaps& caps = c.caps();
  const std::string f = stack(c);
  const std::string why = c.training.framework.source.empty()
                              ? std::string()
                              : " (" + c.training.framework.source + ")";
  switch (r.rule) {
    case RuleId::framework_zero_stage:
      return {"--zero", fmt::format("{} has no ZeRO-{}{}; its stages are {}", f, p.zero, why,
                                    zero_list(caps))};
    case RuleId::framework_zero_with_pp:
      return {"--zero",
              fmt::format("{} combines pipeline parallel with ZeRO stages up to {} "
                          "only{}; ZeRO-{} with pp {} cannot run: use --zero {} or no --pp",
                          f, caps.max_zero_with_pp, why, p.zero, p.pp, caps.max_zero_with_pp)};
    case RuleId::framework_tp:
      return {"--tp", fmt::format("{} has no tensor parallelism{}", f, why)};
    case RuleId::framework_sequence_parallel:
      return {"--sequence-parallel",
              fmt::format("{} has no Megatron-style sequence parallelism{}", f, why)};
    case RuleId::framework_pp:
      return {"--pp", fmt::format("{} has no pipeline parallelism{}", f, why)};
    case RuleId::framework_interleave:
      return {"--interleave",
              fmt::format("{} has no interleaved (virtual-stage) pipeline schedule{}", f, why)};
    case RuleId::framework_cp:
      return {"--cp", fmt::format("{} has no ring-attention context parallelism{}", f, why)};
    case RuleId::framework_ep:
      return {"--ep", fmt::format("{} sets no expert parallelism from a plan{}", f, why)};
    case RuleId::framework_fp8:
      return {"--precision", fmt::format("{} has no fp8 training path{}; use bf16", f, why)};
    case RuleId::framework_fp16:
      return {"--precision", fmt::format("{} trains in bf16 or fp32, not fp16{}", f, why)};
    case RuleId::framework_tp_across_nodes:
      return {"--allow-tp-across-nodes",
              fmt::format("{} keeps tensor parallel inside a node{}", f, why)};
    case RuleId::framework_replicate_1d:
      return {"--zero", fmt::format("{}'s plain data parallel (ZeRO-0) runs no other "
                                    "parallelism{}; use --zero {}",
                                    f, why, caps.has_zero(2) ? 2 : 3)};
    default:
      break;
  }
  return {"--framework", "unknown rule"};
}

PlanProblem shape_words(const RuleProblem& r, const RuleContext& c) {
  const ParallelPlan& p = r.plan;
  const ModelSpec& m = c.model;
  switch (r.rule) {
    case RuleId::layer_shapes_needed:
      return {p.tp > 1   ? "--tp"
              : p.pp > 1 ? "--pp"
              : p.cp > 1 ? "--cp"
                         : "--interleave",
              "tensor, pipeline and context parallel and interleaving depend on the layer "
              "shapes; give --model or --layers/--hidden/--heads instead of --params"};
    case RuleId::tp_divides_heads:
      return {"--tp", fmt::format("tensor parallel {} does not divide the {} attention heads", p.tp,
                                  m.heads)};
    case RuleId::tp_fits_kv_heads:
      return {"--tp", fmt::format("tensor parallel {} neither divides nor is a multiple of the {} "
                                  "key/value heads",
                                  p.tp, m.kv_heads)};
    case RuleId::tp_divides_ffn:
      return {"--tp", fmt::format("tensor parallel {} does not divide the MLP width {}", p.tp,
                                  m.ffn_hidden)};
    case RuleId::pp_within_layers:
      return {"--pp", fmt::format("{} pipeline stages for {} layers; use at most {}", p.pp,
                                  m.layers, m.layers)};
    case RuleId::interleave_equal_chunks:
      return {"--interleave",
              fmt::format("{} layers do not split into pp {} x interleave {} equal chunks",
                          m.layers, p.pp, p.interleave)};
    case RuleId::interleave_needs_pp:
      return {"--interleave", "interleaving needs pipeline parallel (--pp > 1)"};
    case RuleId::interleave_micro_batches:
      return {"--interleave",
              fmt::format("the interleaved schedule needs the {} micro-batches per step to be a "
                          "multiple of pp {}",
                          micro_batches_per_step(c.training, p), p.pp)};
    case RuleId::ep_needs_moe:
      return {"--ep", "expert parallelism needs a mixture-of-experts model"};
    case RuleId::ep_divides:
      return {"--ep", fmt::format("expert parallel {} must divide the {} experts and dp x cp = {}",
                                  p.ep, m.experts, p.dp * p.cp)};
    default:
      return framework_words(r, c);
  }
}

}  // namespace

PlanProblem words(const RuleProblem& r, const RuleContext& c) {
  const ParallelPlan& p = r.plan;
  const ClusterSpec& cl = c.cluster;
  const TrainingSpec& tr = c.training;
  switch (r.rule) {
    case RuleId::degrees_positive:
      return {"--dp/--tp/--pp/--cp/--ep/--micro-batch/--interleave",
              "every degree must be at least 1"};
    case RuleId::gpu_count:
      return {"--dp/--tp/--pp/--cp",
              fmt::format("dp {} x tp {} x pp {} x cp {} = {} GPUs, but the cluster has {}; the "
                          "product of the degrees must equal --gpus",
                          p.dp, p.tp, p.pp, p.cp, p.gpus(), cl.gpus)};
    case RuleId::zero_stage:
      return {"--zero", fmt::format("{} is not a ZeRO stage; use 0-3", p.zero)};
    case RuleId::tp_within_node:
      return {"--tp", fmt::format("tensor parallel {} spans more than the {} GPUs of a node; keep "
                                  "tp <= {} or pass --allow-tp-across-nodes",
                                  p.tp, cl.gpus_per_node, cl.gpus_per_node)};
    case RuleId::precision_supported:
      return {"--precision", fmt::format("{} has no {} tensor cores; use bf16 or fp16", cl.gpu.name,
                                         to_string(tr.precision))};
    case RuleId::sequence_parallel_needs_tp:
      return {"--sequence-parallel",
              "sequence parallelism splits tensor-parallel regions; it needs --tp > 1"};
    case RuleId::batch_split:
      return {"--global-batch",
              fmt::format("{} sequences do not split into micro-batches of {} on {} "
                          "data-parallel ranks; use a multiple of {}",
                          tr.global_batch, p.micro_batch, p.dp, p.dp * p.micro_batch)};
    case RuleId::cp_divides_sequence:
      return {"--cp", fmt::format("context parallel {} does not divide the sequence length {}",
                                  p.cp, tr.seq_len)};
    default:
      return shape_words(r, c);
  }
}

std::vector<PlanProblem> plan_problems(const ParallelPlan& plan, const RuleContext& context) {
  std::vector<PlanProblem> out;
  for (const RuleProblem& r : check_plan(plan, context)) out.push_back(words(r, context));
  return out;
}

void require_runnable_inputs(const RuleContext& context) {
  const auto problems = check_inputs(context);
  if (problems.empty()) return;
  const PlanProblem p = words(problems.front(), context);
  throw InputError(p.field, p.message);
}

void require_runnable(const ParallelPlan& plan, const RuleContext& context,
                      const std::string& prefix) {
  const auto problems = plan_problems(plan, context);
  if (problems.empty()) return;
  const PlanProblem& first = problems.front();
  std::string message = first.message;
  for (size_t i = 1; i < problems.size(); ++i)
    message += "; also " + problems[i].field + ": " + problems[i].message;
  throw InputError(prefix.empty() ? first.field : prefix + " (" + first.field + ")", message);
}

}  // namespace shardplan
