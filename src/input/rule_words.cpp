// Flags and sentences for the plan rules (rules.hpp); the engine only returns which rule broke.
#include "shardplan/rule_words.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "shardplan/error.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/offload.hpp"
#include "precision_words.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

// The training precisions whose GEMM dtype this GPU has tensor cores for ("bf16 or fp16" on
// an A100, "fp16" on a V100).
std::string precisions_it_runs(const GpuSpec& g) {
  std::string out;
  for (const MathDtype d : {MathDtype::bf16, MathDtype::fp16, MathDtype::fp8}) {
    if (g.peak_flops[static_cast<int>(d)] <= 0) continue;
    out += (out.empty() ? "" : " or ") + std::string(to_string(d));
  }
  return out.empty() ? "fp32" : out;
}

// Why the plan's offload cannot run, in the framework's terms.
std::string offload_words(const ParallelPlan& p, const RuleContext& c) {
  const OffloadSupport allowed = offload_support(c.caps());
  const std::string f =
      c.training.framework.name.empty() ? "this stack" : c.training.framework.name;
  switch (offload_problem(p, c.cluster, allowed)) {
    case OffloadProblem::none:
      return "";
    case OffloadProblem::no_host_facts:
      return "the cluster profile gives no host memory or host link bandwidth; add a \"host\" "
             "section to it";
    case OffloadProblem::optimizer_not_supported:
      return f + " cannot offload the optimizer (its profile's capabilities.offload)";
    case OffloadProblem::params_not_supported:
      return f + " cannot offload the parameters (its profile's capabilities.offload)";
    case OffloadProblem::activations_not_supported:
      return f + " cannot offload activations (its profile's capabilities.offload)";
    case OffloadProblem::nvme_not_supported:
      return f + " offloads to host memory only; use --offload-to cpu";
    case OffloadProblem::activations_to_nvme:
      return "activation checkpoints are offloaded to host memory only; use --offload-to cpu";
    case OffloadProblem::parts_together:
      return f + " offloads parameters and optimizer together; use --offload optimizer,params";
    case OffloadProblem::optimizer_needs_zero:
      return fmt::format("optimizer offload needs ZeRO stage {} or more under {} (--zero {})",
                         allowed.optimizer_min_zero, f, allowed.optimizer_min_zero);
    case OffloadProblem::params_need_zero:
      return fmt::format(
          "parameter offload needs sharded parameters under {}: ZeRO stage {} "
          "(--zero {})",
          f, allowed.params_min_zero, allowed.params_min_zero);
    case OffloadProblem::activations_need_recompute:
      return "activation offload moves the layer inputs that full recompute keeps; it needs "
             "--recompute full";
  }
  return "";
}

PlanProblem layout_words(int layers, const ParallelPlan& p) {
  const int chunks = p.pp * p.interleave;
  const LayoutRest r = layout_rest(layers, p);
  if (!r.custom) {
    return {"--interleave",
            fmt::format("{} layers do not split into pp {} x interleave {} equal chunks; give "
                        "--first-stage-layers / --last-stage-layers so that the rest split "
                        "evenly (Llama 3 405B: 126 layers, pp 16, interleave 2, first and last 3)",
                        layers, p.pp, p.interleave)};
  }
  const char* field = p.first_stage_layers >= 0 ? "--first-stage-layers" : "--last-stage-layers";
  if (chunks < 2) return {field, "a first or last stage layout needs --pp > 1"};
  return {field, fmt::format("{} layers less the first stage's {} and the last stage's {} leave "
                             "{} for the other {} virtual stages; choose counts that leave a "
                             "positive multiple of {}",
                             layers, std::max(0, p.first_stage_layers),
                             std::max(0, p.last_stage_layers), r.layers, r.chunks, r.chunks)};
}

PlanProblem schedule_words(const ParallelPlan& p, int micro_batches) {
  const char* name = schedule_name(p);
  switch (schedule_issue(p, micro_batches)) {
    case ScheduleIssue::none:
      break;
    case ScheduleIssue::needs_pipeline:
      return {p.schedule == Schedule::one_f_one_b ? "--interleave" : "--schedule",
              fmt::format("{} is a pipeline schedule; it needs --pp > 1", name)};
    case ScheduleIssue::needs_virtual_stages:
      return {"--interleave", "interleaved needs --interleave 2 or more"};
    case ScheduleIssue::one_chunk_only:
      return {"--interleave", "gpipe runs one model chunk per device; drop --interleave"};
    case ScheduleIssue::two_chunks:
      return {"--interleave", fmt::format("{} runs two model chunks per device in a V; use "
                                          "--interleave 2 (or leave it out)",
                                          name)};
    case ScheduleIssue::too_few_micro_batches:
      return {"--global-batch",
              fmt::format("the {} schedule needs at least {} micro-batches per step, "
                          "and the plan has {}; raise --global-batch or lower "
                          "--micro-batch",
                          name, min_micro_batches(p), micro_batches)};
  }
  return {"--schedule", fmt::format("{} cannot run this plan", name)};
}

std::string stack(const RuleContext& c) {
  const FrameworkProfile& f = c.training.framework;
  return f.name.empty() ? std::string("the stack") : f.name;
}

// "1f1b, interleaved": the names of a capability's values, as the flags take them.
template <typename E>
std::string name_list(const std::vector<E>& values) {
  std::string s;
  for (E v : values) {
    if (!s.empty()) s += ", ";
    s += to_string(v);
  }
  return s;
}

std::string zero_list(const FrameworkCaps& caps) {
  std::string s;
  for (int z : caps.zero_stages) s += (s.empty() ? "" : ", ") + std::to_string(z);
  return s;
}

// Why the plan's offload of N layers' activations cannot run.
std::string offload_layers_words(const ParallelPlan& p, const RuleContext& c,
                                 const std::string& why) {
  const std::string f = stack(c);
  const int fewest = fewest_stage_layers(c.model, p);
  const int n = p.offload.activation_layers;
  switch (activation_layers_problem(p, fewest, c.caps().offload)) {
    case ActivationLayersProblem::none:
      return "";
    case ActivationLayersProblem::not_supported:
      return fmt::format("{} cannot offload the activations of whole layers{} (its profile's "
                         "capabilities.offload.activation_layers); Megatron-LM can",
                         f, why);
    case ActivationLayersProblem::with_checkpoints:
      return "offload either the checkpointed layer inputs (--offload activations, with full "
             "recompute) or N layers' activations without recompute, not both";
    case ActivationLayersProblem::to_nvme:
      return "layer activations are offloaded to host memory only; use --offload-to cpu";
    case ActivationLayersProblem::too_many:
      return fewest == 0 ? "the model gives no layer shapes, so no layers to offload"
                         : fmt::format("{} is not below the {} layers of the stage holding the "
                                       "fewest; use 1 to {} (Megatron-Core: fewer than "
                                       "num_layers)",
                                       n, fewest, fewest - 1);
    case ActivationLayersProblem::with_pp:
      return fmt::format("{} offloads layers' activations only without pipeline parallelism{} "
                         "(Megatron-Core: no support for pipeline parallelism with CPU "
                         "offloading); use --pp 1",
                         f, why);
    case ActivationLayersProblem::with_recompute:
      return fmt::format("{} offloads layers' activations only without recompute{} "
                         "(Megatron-Core: CPU offloading does not work when activation "
                         "recomputation is enabled); use --recompute none",
                         f, why);
  }
  return "";
}

// Megatron-Core's own checks on recompute_modules (TransformerConfig.__post_init__).
std::string recompute_modules_words(const ParallelPlan& p, const RuleContext& c) {
  if (p.recompute != Recompute::selective) {
    return fmt::format("the modules ({}) are what selective recompute redoes (Megatron-Core "
                       "--recompute-granularity selective); add --recompute selective",
                       recompute_modules_text(p.recompute_modules, ", "));
  }
  if ((p.recompute_modules & bit(RecomputeModule::mla_up_proj)) && !c.model.is_mla()) {
    return "mla_up_proj recomputes multi-latent attention's up projections, and this model has "
           "none (Megatron-Core refuses it without multi_latent_attention); drop mla_up_proj";
  }
  return "layernorm and moe_act recompute quantized outputs, which Megatron-Core refuses under "
         "FP8 delayed scaling; use --precision fp8-tensorwise, fp8-blockwise or mxfp8, or drop "
         "them";
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
      if (caps.has_zero(p.zero)) {
        return {"--zero", fmt::format("{} shards experts (ep {}) with ZeRO stages up to {} "
                                      "only{}; use --zero {} or --ep 1",
                                      f, p.ep, caps.expert_parallel_max_zero, why,
                                      caps.expert_parallel_max_zero)};
      }
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
      if (caps.sequence_parallel_always)
        return {"--sequence-parallel",
                fmt::format("{} runs sequence parallelism whenever tp > 1{}; add "
                            "--sequence-parallel",
                            f, why)};
      return {"--sequence-parallel",
              fmt::format("{} has no Megatron-style sequence parallelism{}", f, why)};
    case RuleId::framework_pp:
      return {"--pp", fmt::format("{} has no pipeline parallelism{}", f, why)};
    case RuleId::framework_schedule: {
      const std::string runs = name_list(caps.pipeline_schedules);
      const bool interleaved = schedule_of(p) == Schedule::interleaved;
      if (caps.has_schedule(schedule_of(p))) {
        return {"--interleave", fmt::format("{} runs {} only with 2 or more virtual stages per "
                                            "device{}; use --interleave 2 or more",
                                            f, to_string(p.schedule), why)};
      }
      return {interleaved ? "--interleave" : "--schedule",
              fmt::format("{} runs the pipeline schedules {} only{}; {} is not one of them", f,
                          runs, why, interleaved ? "interleaved" : to_string(p.schedule))};
    }
    case RuleId::framework_stage_layout:
      return {p.first_stage_layers >= 0 ? "--first-stage-layers" : "--last-stage-layers",
              caps.stage_layout == FrameworkCaps::StageLayout::none
                  ? fmt::format("{} splits the layers evenly (it sets no first or last stage "
                                "layer counts){}; drop the stage layout",
                                f, why)
                  : fmt::format("{} can make the first and last stage lighter than the others "
                                "but not heavier{}",
                                f, why)};
    case RuleId::framework_cp:
      return {"--cp", c.training.context_parallel == ContextParallel::ulysses
                          ? fmt::format("{} has no Ulysses (all-to-all) context parallelism{}; "
                                        "--cp-kind ring prices ring attention",
                                        f, why)
                          : fmt::format("{} has no ring-attention context parallelism{}{}", f, why,
                                        caps.ulysses ? "; --cp-kind ulysses prices its Ulysses"
                                                     : "")};
    case RuleId::framework_ep:
      if (!caps.expert_parallel)
        return {"--ep", fmt::format("{} sets no expert parallelism from a plan{}", f, why)};
      if (!caps.shards_experts_of(c.model.model_type)) {
        std::set<std::string> presets;  // one name may cover several model_types
        for (const auto& [type, name] : caps.expert_parallel_models) presets.insert(name);
        return {"--ep", fmt::format("{} shards experts only for the model families it has "
                                    "presets for ('{}'), and {} is {}{}; use --ep 1",
                                    f, fmt::join(presets, "', '"), c.model.name,
                                    c.model.model_type.empty() ? std::string("of no known family")
                                                               : "'" + c.model.model_type + "'",
                                    why)};
      }
      return {"--ep",
              fmt::format("{} shards experts only with tp 1{}; use --tp 1 or --ep 1", f, why)};
    case RuleId::framework_moe_overlap:
      return {"--moe-a2a-overlap",
              caps.moe_a2a_overlap
                  ? fmt::format("{} hides expert all-to-alls only on the {} schedule{}", f,
                                caps.moe_a2a_overlap_schedules.empty()
                                    ? std::string("1f1b")
                                    : std::string(to_string(caps.moe_a2a_overlap_schedules[0])),
                                why)
                  : fmt::format("{} has no switch that hides expert all-to-alls behind another "
                                "micro-batch's compute{}",
                                f, why)};
    case RuleId::framework_moe_dispatcher:
      return {"--moe-dispatcher",
              fmt::format("{} runs the MoE dispatchers {} only{}; {} is not one of them", f,
                          name_list(caps.moe_dispatchers), why,
                          to_string(c.training.moe_dispatcher))};
    case RuleId::framework_compiled_loss:
      return {"--compiled-loss",
              fmt::format("{}'s profile prices no compiled loss (no bytes per logit for one); "
                          "it applies to torchtitan (--framework torchtitan), or drop "
                          "--compiled-loss",
                          f)};
    case RuleId::framework_cuda_graphs:
      return {"--cuda-graphs",
              fmt::format("{}'s profile prices no CUDA graphs (no share of the fixed costs per "
                          "layer they leave); they apply to Megatron-Core (--framework megatron), "
                          "or drop --cuda-graphs",
                          f)};
    case RuleId::framework_recompute_modules:
      return {"--recompute-modules",
              fmt::format("{} does not recompute Megatron-Core's modules by name{}; use "
                          "--recompute selective (its own policy) or full",
                          f, why)};
    case RuleId::framework_fp8:
      return {"--precision", fmt::format("{} has no fp8 training path{}; use bf16", f, why)};
    case RuleId::framework_fp16:
      return {"--precision", fmt::format("{} trains in bf16 or fp32, not fp16{}", f, why)};
    case RuleId::framework_bf16_pure:
      return {"--precision",
              fmt::format("{} keeps a master copy of the weights and has no bf16-pure "
                          "training path{}; use bf16",
                          f, why)};
    case RuleId::framework_precision:
      return {"--precision",
              fmt::format("{} does not run the {} recipe ({}: frameworks); {} do", f,
                          c.training.recipe.name, c.training.recipe.source,
                          recipe_frameworks(c.training.recipe))};
    case RuleId::framework_tp_across_nodes:
      return {"--allow-tp-across-nodes",
              fmt::format("{} keeps tensor parallel inside a node{}", f, why)};
    case RuleId::framework_replicate_1d:
      return {"--zero", fmt::format("{}'s plain data parallel (ZeRO-0) runs no other "
                                    "parallelism{}; use --zero {}",
                                    f, why, caps.has_zero(2) ? 2 : 3)};
    case RuleId::framework_offload_shards:
      return {"--offload",
              fmt::format("{} offloads only inside FSDP, which it applies with the weights "
                          "sharded over at least {} ranks{}; the plan shards them over {}: give "
                          "--zero 2 or 3 with at least {} data-parallel ranks",
                          f, caps.offload.min_shard_ranks, why, p.zero >= 2 ? p.shard_degree() : 1,
                          caps.offload.min_shard_ranks)};
    case RuleId::framework_offload_layers:
      return {"--offload-activation-layers", offload_layers_words(p, c, why)};
    case RuleId::framework_hsdp:
      return {"--dp-shard",
              caps.hsdp_zero_stages.empty()
                  ? fmt::format("{} has no hybrid sharding (shard inside a group, replicate "
                                "across){}; leave --dp-shard out",
                                f, why)
                  : fmt::format("{} runs hybrid sharding at ZeRO stages {} only{}; use --zero "
                                "{}",
                                f, fmt::join(caps.hsdp_zero_stages, ", "), why,
                                caps.hsdp_zero_stages.back())};
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
    case RuleId::ulysses_divides_heads:
      return {"--cp", fmt::format("Ulysses context parallel {} does not divide the {} attention "
                                  "heads of each of the {} tensor-parallel ranks",
                                  p.cp, m.heads / p.tp, p.tp)};
    case RuleId::tp_fits_kv_heads:
      return {"--tp", fmt::format("tensor parallel {} neither divides nor is a multiple of the {} "
                                  "key/value heads",
                                  p.tp, m.kv_heads)};
    case RuleId::tp_divides_ffn:
      return {"--tp", fmt::format("tensor parallel {} does not divide the MLP width {}", p.tp,
                                  m.ffn_hidden)};
    case RuleId::tp_divides_recurrent_heads:
      if (m.is_hybrid()) {
        return {"--tp", fmt::format("tensor parallel {} does not divide the {} gated DeltaNet key "
                                    "heads",
                                    p.tp, m.linear.key_heads)};
      }
      return {"--tp", fmt::format("tensor parallel {} does not divide the {} Mamba-2 heads and {} "
                                  "groups (Megatron-Core's MambaMixer splits both); use a common "
                                  "divisor",
                                  p.tp, m.mamba.heads, m.mamba.groups)};
    case RuleId::cp_over_recurrent_layers:
      return {"--cp", "the model's recurrent layers (Mamba-2, gated DeltaNet or lightning "
                      "attention) carry a state along the whole sequence; splitting it over "
                      "context-parallel ranks needs their own exchange (Megatron-Core's "
                      "MambaContextParallel), which shardplan does not price: use --cp 1"};
    case RuleId::pp_within_layers:
      return {"--pp", fmt::format("{} pipeline stages for {} layers; use at most {}", p.pp,
                                  m.layers, m.layers)};
    case RuleId::stage_layout:
      return layout_words(m.layers, p);
    case RuleId::interleave_needs_pp:
      return {"--interleave", "interleaving needs pipeline parallel (--pp > 1)"};
    case RuleId::schedule_runs:
      return schedule_words(p, micro_batches_per_step(c.training, p));
    case RuleId::ep_needs_moe:
      return {"--ep", "expert parallelism needs a mixture-of-experts model"};
    case RuleId::ep_divides:
      if (p.etp > 0) {
        return {"--ep",
                fmt::format("expert parallel {} x expert tp {} must divide tp x dp x cp = {}, and "
                            "ep the {} experts",
                            p.ep, p.etp, static_cast<long long>(p.tp) * p.dp * p.cp, m.experts)};
      }
      return {"--ep", fmt::format("expert parallel {} must divide the {} experts and dp x cp = {}",
                                  p.ep, m.experts, p.dp * p.cp)};
    case RuleId::offload_supported:
      return {"--offload", offload_words(p, c)};
    case RuleId::expert_tp_needs_moe:
      return {"--expert-tp", "expert tensor parallelism needs a mixture-of-experts model"};
    case RuleId::expert_tp_divides_ffn:
      return {"--expert-tp",
              fmt::format("expert tp {} does not divide the expert width {}", p.etp, m.ffn_hidden)};
    case RuleId::moe_overlap_needs_ep:
      return {"--moe-a2a-overlap",
              m.is_moe() ? std::string("hiding the expert all-to-alls needs them: set --ep > 1")
                         : std::string("hiding expert all-to-alls needs a mixture-of-experts "
                                       "model")};
    case RuleId::moe_overlap_pairs:
      return {"--moe-a2a-overlap",
              p.recompute == Recompute::full
                  ? std::string("the paired forward and backward passes cannot run under full "
                                "recompute (Megatron-Core refuses --overlap-moe-expert-parallel-"
                                "comm with it); use selective or no recompute")
              : (recomputed_modules(p) & bit(RecomputeModule::moe)) != 0
                  ? std::string("the paired passes cannot recompute the whole MoE layer "
                                "(Megatron-Core refuses the moe recompute module beside "
                                "--overlap-moe-expert-parallel-comm); drop moe from "
                                "--recompute-modules")
              : p.pp > 1 && p.interleave < 2
                  ? std::string("with a pipeline, the all-to-all overlap runs on the interleaved "
                                "schedule only: set --interleave 2 or more, or --schedule "
                                "dualpipe-v where the framework runs it")
                  : std::string("a step of one micro-batch has no other pass to hide the "
                                "all-to-alls behind: raise --global-batch or lower "
                                "--micro-batch")};
    case RuleId::recompute_modules_apply:
      return {"--recompute-modules", recompute_modules_words(p, c)};
    case RuleId::deepep_group_size: {
      std::string sizes;
      for (int n : deepep_group_sizes()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n);
      return {"--ep",
              fmt::format("DeepEP has dispatch and combine configs for expert groups of {} GPUs "
                          "only (deep_ep/buffer.py get_dispatch_config); ep {} x expert tp {} = "
                          "{} is not one of them: choose another --ep or --moe-dispatcher "
                          "alltoall",
                          sizes, p.ep, p.expert_tp(), p.ep * p.expert_tp())};
    }
    default:
      return framework_words(r, c);
  }
}

}  // namespace

namespace {

// Why a hybrid shard degree cannot run.
std::string dp_shard_words(const ParallelPlan& p, const ModelSpec& m) {
  if (p.zero < 1) {
    return fmt::format("hybrid sharding shards ZeRO state; ZeRO-0 shards none: use --zero 1-3 "
                       "with --dp-shard {}, or leave --dp-shard out",
                       p.dp_shard);
  }
  if (p.dp_shard >= p.dp) {
    return fmt::format("a shard group of {} is the whole data-parallel group (dp {}): that is "
                       "full sharding; leave --dp-shard out, or give a divisor of {} below it",
                       p.dp_shard, p.dp, p.dp);
  }
  const bool splits = p.dp_shard >= 2 && p.dp % p.dp_shard == 0;
  if (splits && m.is_moe()) {
    return fmt::format(
        "the expert group (ep {} x expert tp {}) must lie inside the shard group x cp x tp "
        "({} x {} x {} = {} ranks), which torchtitan shards the experts over "
        "(parallel_dims.py dp_shard_mod_ep); give a --dp-shard that makes it a multiple of {}",
        p.ep, p.expert_tp(), p.dp_shard, p.cp, p.tp, p.dp_shard * p.cp * p.tp,
        p.ep * p.expert_tp());
  }
  return fmt::format("{} does not split dp {} into replicas of 2 or more ranks; use a divisor "
                     "of {} from 2 to {}",
                     p.dp_shard, p.dp, p.dp, p.dp / 2);
}

}  // namespace

std::string rule_gist(RuleId rule) {
  switch (rule) {
    case RuleId::degrees_positive:
      return "every degree and the micro-batch must be at least 1";
    case RuleId::gpu_count:
      return "dp x tp x pp x cp must use every GPU";
    case RuleId::zero_stage:
      return "the ZeRO stage must be 0 to 3";
    case RuleId::tp_within_node:
      return "tensor parallel must stay inside a scale-up (NVLink) domain";
    case RuleId::precision_supported:
      return "the GPU has no tensor cores for the precision";
    case RuleId::precision_generation:
      return "the GPU's generation does not run the precision recipe";
    case RuleId::sequence_parallel_needs_tp:
      return "sequence parallel needs tp 2 or more";
    case RuleId::batch_split:
      return "the global batch does not split into dp x micro-batch x accumulation";
    case RuleId::cp_divides_sequence:
      return "context parallel must divide the sequence";
    case RuleId::layer_shapes_needed:
      return "the split needs the model's architecture";
    case RuleId::tp_divides_heads:
      return "tensor parallel must divide the attention heads";
    case RuleId::ulysses_divides_heads:
      return "Ulysses context parallel must divide each tensor-parallel rank's heads";
    case RuleId::tp_fits_kv_heads:
      return "tensor parallel must divide the KV heads or be a multiple of them";
    case RuleId::tp_divides_ffn:
      return "tensor parallel must divide the MLP width";
    case RuleId::tp_divides_recurrent_heads:
      return "tensor parallel must divide the Mamba-2 heads and groups (DeltaNet key heads)";
    case RuleId::cp_over_recurrent_layers:
      return "context parallel over recurrent (Mamba-2, DeltaNet, lightning) layers is not modelled";
    case RuleId::pp_within_layers:
      return "pipeline stages cannot outnumber the layers";
    case RuleId::stage_layout:
      return "the layers do not split evenly into the stages";
    case RuleId::interleave_needs_pp:
      return "interleaving needs pipeline parallel";
    case RuleId::schedule_runs:
      return "the schedule needs more micro-batches or chunks per device than the plan has";
    case RuleId::ep_needs_moe:
      return "expert parallel needs a mixture-of-experts model";
    case RuleId::ep_divides:
      return "expert parallel must divide the experts and dp x cp";
    case RuleId::expert_tp_needs_moe:
      return "expert tensor parallel needs a mixture-of-experts model";
    case RuleId::expert_tp_divides_ffn:
      return "expert tensor parallel must divide the expert MLP";
    case RuleId::moe_overlap_needs_ep:
      return "overlapping expert all-to-alls needs expert parallel";
    case RuleId::moe_overlap_pairs:
      return "overlapping expert all-to-alls needs passes to pair";
    case RuleId::offload_supported:
      return "the framework offloads none of it, or the cluster states no host memory";
    case RuleId::recompute_modules_apply:
      return "the recompute modules need selective recompute and a model and recipe they fit";
    case RuleId::framework_zero_stage:
      return "the framework has no ZeRO stage this rung needs";
    case RuleId::framework_zero_with_pp:
      return "the framework cannot combine this ZeRO stage with pipeline parallel";
    case RuleId::framework_tp:
      return "the framework has no tensor parallelism";
    case RuleId::framework_sequence_parallel:
      return "the framework runs sequence parallelism other than the plan says";
    case RuleId::framework_pp:
      return "the framework has no pipeline parallelism";
    case RuleId::framework_schedule:
      return "the framework runs no pipeline schedule this rung needs";
    case RuleId::framework_stage_layout:
      return "the framework cannot set uneven first or last stages";
    case RuleId::framework_cp:
      return "the framework has no context parallelism";
    case RuleId::framework_ep:
      return "the framework does not shard this model's experts";
    case RuleId::framework_moe_overlap:
      return "the framework does not overlap expert all-to-alls with other micro-batches";
    case RuleId::framework_moe_dispatcher:
      return "the framework does not run this MoE dispatcher";
    case RuleId::framework_compiled_loss:
      return "the framework's profile prices no compiled loss";
    case RuleId::framework_cuda_graphs:
      return "the framework's profile prices no CUDA graphs";
    case RuleId::framework_recompute_modules:
      return "the framework does not recompute modules by name";
    case RuleId::framework_fp8:
      return "the framework does not train in fp8";
    case RuleId::framework_fp16:
      return "the framework does not train in fp16";
    case RuleId::framework_bf16_pure:
      return "the framework does not train in pure bf16";
    case RuleId::framework_precision:
      return "the framework does not run the precision recipe";
    case RuleId::framework_tp_across_nodes:
      return "the framework keeps tensor parallel inside a node";
    case RuleId::framework_replicate_1d:
      return "the framework replicates weights (ZeRO-0) only without tp, pp, cp or ep";
    case RuleId::framework_offload_shards:
      return "the framework offloads only with the weights sharded over enough ranks";
    case RuleId::framework_offload_layers:
      return "the framework offloads no layers' activations, or not under this plan";
    case RuleId::deepep_group_size:
      return "DeepEP has no config for this expert-parallel group size";
    case RuleId::dp_shard_divides:
      return "hybrid sharding needs ZeRO 1-3, a shard group dividing dp into 2 or more replicas of "
             "2 or more ranks, and a mixture of experts' expert group inside it";
    case RuleId::framework_hsdp:
      return "the framework has no hybrid sharding at this ZeRO stage";
  }
  return to_string(rule);
}

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
      return {"--tp", fmt::format("tensor parallel {} spans more than the {} GPUs of {} ({}); "
                                  "keep tp <= {} or pass --allow-tp-across-nodes",
                                  p.tp, cl.domain_gpus(),
                                  cl.rack_scale() ? "a scale-up domain" : "a node", cl.intra.name,
                                  cl.domain_gpus())};
    case RuleId::precision_supported: {
      // A recipe this generation cannot run says which one can (nvfp4 on an H100).
      const bool generation = !cl.gpu.generation.empty() && !tr.recipe.runs_on(cl.gpu.generation);
      return {"--precision",
              fmt::format("{} has no {} tensor cores{}; use {}", cl.gpu.name,
                          to_string(tr.precision),
                          generation ? ": " + generation_words(c) : std::string(),
                          precisions_it_runs(cl.gpu))};
    }
    case RuleId::precision_generation:
      return {"--precision", generation_words(c)};
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
    case RuleId::dp_shard_divides:
      return {"--dp-shard", dp_shard_words(p, c.model)};
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
