// DeepSpeed config JSON (deepspeedai/DeepSpeed master, v0.19.x). Keys and checks read from
// deepspeed/runtime/config.py, zero/config.py, pipe/engine.py, launcher/runner.py.
#include <fmt/format.h>

#include "common.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

// What DeepSpeed itself can run (its profile's capabilities), whichever stack priced the plan.
const FrameworkCaps& deepspeed_caps() {
  static const FrameworkProfile profile = load_framework(Framework::deepspeed);
  return profile.caps;
}

std::string topology(const ParallelPlan& p) {
  return p.tp > 1 ? fmt::format("PipeModelDataParallelTopology(num_pp={}, num_mp={}, num_dp={})",
                                p.pp, p.tp, p.dp)
                  : fmt::format("PipeDataParallelTopology(num_pp={}, num_dp={})", p.pp, p.dp);
}

std::vector<std::string> script_duties(const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const FrameworkCaps& deepspeed = deepspeed_caps();
  const LongRunSettings& s = in.settings;
  std::vector<std::string> n;
  if (p.pp > 1) {
    n.push_back(fmt::format(
        "build the model as deepspeed.pipe.PipelineModule(layers, topology={}){} and call "
        "engine.train_batch() once per step (it runs the {} micro-batches): the JSON holds no "
        "pipeline or tensor degree",
        topology(p), p.tp > 1 ? " with tensor-parallel layers (as Megatron-DeepSpeed)" : "",
        accumulation_steps(in)));
    if (p.sequence_parallel)
      n.push_back(
          "shard the tensor-parallel layers' norms and dropout along the sequence "
          "(sequence parallel, Megatron-DeepSpeed --sequence-parallel)");
  }
  if (p.tp > 1 && p.pp == 1) {
    n.push_back(fmt::format(
        "train_batch_size is left out: without an mpu DeepSpeed checks it against the whole world "
        "({} ranks, runtime/config.py), but the {} tensor-parallel ranks share each micro-batch, "
        "so "
        "the global batch is {}",
        in.cluster.gpus, p.tp, in.training.global_batch));
    if (p.zero == 3)
      n.push_back("AutoTP with ZeRO-3 needs a recent DeepSpeed (v0.16.4 asserted ZeRO stage <= 2)");
  }
  std::string preset;  // AutoEP's name for the model's family, where it has one
  const bool autoep =
      in.model.is_moe() && deepspeed.shards_experts_of(in.model.model_type, &preset);
  if (in.model.is_moe() && p.ep > 1) {
    n.push_back(fmt::format(
        "expert parallelism is AutoEP's (the expert_parallel block): it needs a DeepSpeed with "
        "AutoEP (PR #7938, docs/code-docs/source/moe.rst) and a Hugging Face model of its "
        "preset's family; it replaces each MoE block at deepspeed.initialize() with grouped "
        "experts, {} of the {} on each rank",
        in.model.experts / p.ep, in.model.experts));
    if (preset.starts_with("deepseek")) {
      n.push_back(
          "AutoEP's DeepSeek presets run without the auxiliary-loss-free expert bias (a "
          "load_balance_coeff is refused): balance comes from the auxiliary loss alone");
    }
  } else if (in.model.is_moe()) {
    n.push_back(
        autoep ? fmt::format("the {} experts of each MoE layer stay whole on every rank, as the "
                             "plan has ep 1; DeepSpeed's AutoEP would shard them (preset '{}')",
                             in.model.experts, preset)
               : fmt::format("the {} experts of each MoE layer stay whole on every rank: "
                             "DeepSpeed's AutoEP has no preset for this model's family ({}), and "
                             "model code (deepspeed.moe.layer.MoE(ep_size=...)) is not priced; "
                             "`shardplan plan --framework all` compares the stacks that shard "
                             "experts",
                             in.model.experts,
                             in.model.model_type.empty() ? "unknown" : in.model.model_type));
  }
  if (p.recompute == Recompute::full && p.pp == 1) {
    n.push_back(
        "recompute every transformer layer: wrap each in deepspeed.checkpointing.checkpoint (or "
        "model.gradient_checkpointing_enable() for a Hugging Face model)");
  } else if (p.recompute == Recompute::selective) {
    n.push_back(
        "selective recompute has no DeepSpeed key: use flash attention, which keeps no s x s "
        "scores (the "
        "term selective recompute removes, Korthikanti et al. 2022)");
  }
  n.push_back(fmt::format(
      "create the optimizer the plan assumed ({}) in the script: the config has no optimizer "
      "section",
      to_string(in.training.optimizer)));
  n.push_back(emit::optimizer_duty(in));
  n.push_back(fmt::format(
      "every {} steps call engine.save_checkpoint(dir, tag=f\"global_step{{step}}\", "
      "client_state=...) "
      "with the random seed (--seed), the data loader's position and the RNG states in client_state (the engine "
      "saves model and optimizer shards, none of those); at start call engine.load_checkpoint(dir)",
      s.checkpoint_interval_steps));
  n.push_back(fmt::format(
      "DeepSpeed has no keep-last key: after each save delete all but the newest {} global_step* "
      "directories",
      s.keep_last));
  n.push_back(
      fmt::format("seed Python, NumPy and torch with {} before deepspeed.initialize", s.seed));
  n.push_back(emit::straggler_note(in));
  return n;
}

std::vector<std::string> launch_lines(const EmitInputs& in) {
  const int nodes = in.cluster.nodes();
  const int timeout = in.settings.timeout_minutes;
  const std::string config = emit::config_path(in, LauncherFormat::deepspeed);
  if (nodes == 1) {
    // One node: the runner launches locally and inherits the environment (launcher/runner.py).
    return {
        fmt::format("DEEPSPEED_TIMEOUT={} deepspeed --num_gpus {} train.py --deepspeed "
                    "--deepspeed_config {}   # timeout in minutes",
                    timeout, in.cluster.gpus_per_node, config)};
  }
  // Several nodes: only .deepspeed_env (in ~ or .) and a few prefixes reach the other nodes.
  return {fmt::format("echo DEEPSPEED_TIMEOUT={} >> .deepspeed_env   # minutes; the runner exports "
                      ".deepspeed_env to every node (launcher/runner.py)",
                      timeout),
          fmt::format("deepspeed --hostfile hostfile --num_nodes {} --num_gpus {} train.py "
                      "--deepspeed --deepspeed_config {}",
                      nodes, in.cluster.gpus_per_node, config),
          fmt::format("# hostfile: {} lines such as 'node001 slots={}'", nodes,
                      in.cluster.gpus_per_node)};
}

// ZeRO-Offload / ZeRO-Infinity: zero_optimization.offload_optimizer / offload_param
// {device, nvme_path, pin_memory} and activation_checkpointing.cpu_checkpointing
// (deepspeed.ai/docs/config-json).
void add_offload(nlohmann::json& j, std::vector<Provenance>& why, const Offload& o) {
  const bool nvme = o.to == OffloadTarget::nvme;
  auto block = [&](const char* key, const char* what) {
    nlohmann::json b = {{"device", to_string(o.to)}, {"pin_memory", true}};
    if (nvme) b["nvme_path"] = "/local_nvme";
    j["zero_optimization"][key] = b;
    why.push_back({fmt::format("zero_optimization.{}.device", key), to_string(o.to),
                   fmt::format("plan: {} offloaded", what)});
    why.push_back({fmt::format("zero_optimization.{}.pin_memory", key), "true",
                   "page-locked host buffers: full PCIe bandwidth for the copies"});
    if (nvme) {
      why.push_back({fmt::format("zero_optimization.{}.nvme_path", key), "/local_nvme",
                     "DeepSpeed's default path: point it at the node's local NVMe mount"});
    }
  };
  if (o.optimizer) block("offload_optimizer", "optimizer states and CPU Adam");
  if (o.params) block("offload_param", "weights");
  if (o.activations) {
    j["activation_checkpointing"] = {{"cpu_checkpointing", true}};
    why.push_back({"activation_checkpointing.cpu_checkpointing", "true",
                   "plan: checkpointed layer inputs in host memory (used when the training "
                   "script checkpoints through deepspeed.checkpointing)"});
  }
}

}  // namespace

std::vector<PlanProblem> deepspeed_problems(const EmitInputs& in) {
  return emit::framework_problems(in, Framework::deepspeed);
}

DeepSpeedConfig emit_deepspeed(const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const TrainingSpec& tr = in.training;
  const bool autotp = p.tp > 1 && p.pp == 1;
  DeepSpeedConfig c;
  nlohmann::json& j = c.config;
  std::vector<Provenance>& why = c.meta.provenance;
  why = emit::common_provenance(in);
  if (!autotp) {
    j["train_batch_size"] = tr.global_batch;
    why.push_back({"train_batch_size", std::to_string(tr.global_batch),
                   p.pp > 1
                       ? "global batch; the pipeline engine asserts it = micro x accumulation x "
                         "data-parallel size"
                       : "global batch; DeepSpeed asserts it = micro x accumulation x world size"});
  }
  j["train_micro_batch_size_per_gpu"] = p.micro_batch;
  j["gradient_accumulation_steps"] = accumulation_steps(in);
  j["zero_optimization"] = {{"stage", p.zero}};
  // DeepSpeed's overlap_comm default is true for stage 3 only (zero/config.py
  // DeepSpeedZeroConfig.overlap_comm_valid); the stage-3 estimate already prefetches the next
  // layer's gather (the deepspeed profile's overlap.param_gather), so keep DeepSpeed's default
  // unless --no-overlap turned overlap off.
  if (p.zero == 3) {
    j["zero_optimization"]["overlap_comm"] = tr.overlap_param_gather;
    why.push_back({"zero_optimization.overlap_comm", tr.overlap_param_gather ? "true" : "false",
                   tr.overlap_param_gather
                       ? "DeepSpeed's stage-3 default (zero/config.py overlap_comm_valid); the "
                         "estimate priced the gradient reduce-scatter as not overlapped (the "
                         "deepspeed profile's overlap.grad_reduce), so the run may be faster"
                       : "--no-overlap"});
  } else if (p.zero >= 1) {
    j["zero_optimization"]["overlap_comm"] = tr.overlap_grad_reduce;
    why.push_back({"zero_optimization.overlap_comm", tr.overlap_grad_reduce ? "true" : "false",
                   "as priced (the deepspeed profile's overlap.grad_reduce; DeepSpeed's default "
                   "for stages 1-2 is false)"});
  }
  why.push_back(
      {"zero_optimization.stage", std::to_string(p.zero), emit::plan_origin(in) + " (ZeRO stage)"});
  add_offload(j, why, p.offload);
  if (tr.precision == Precision::bf16) j["bf16"] = {{"enabled", true}};
  if (tr.precision == Precision::fp16) j["fp16"] = {{"enabled", true}};
  if (tr.precision != Precision::fp32) {
    why.push_back(
        {std::string(to_string(tr.precision)) + ".enabled", "true", "training precision"});
  }
  const double clip = optimizer_of(in).clip_grad;
  j["gradient_clipping"] = clip;
  why.push_back({"gradient_clipping", fmt::format("{:g}", clip),
                 "the recipe's clipping, written out: DeepSpeed's default went from 0 (off) to "
                 "1.0 in v0.19.3"});
  j["steps_per_print"] = 1;
  why.push_back({"steps_per_print", "1",
                 "long runs: log throughput every step so a slow node shows at once"});
  j["checkpoint"] = {{"tag_validation", "Fail"}};
  why.push_back({"checkpoint.tag_validation", "Fail",
                 "a checkpoint tag that differs across ranks stops the run"});
  if (autotp) {
    j["tensor_parallel"] = {{"autotp_size", p.tp}};
    why.push_back(
        {"tensor_parallel.autotp_size", std::to_string(p.tp), emit::plan_origin(in) + " (AutoTP)"});
  }
  std::string preset;
  if (p.ep > 1 && deepspeed_caps().shards_experts_of(in.model.model_type, &preset)) {
    // AutoEP (deepspeed/module_inject/auto_ep_config.py AutoEPConfig): the expert-parallel
    // group out of the data-parallel ranks, the model family by its preset name.
    j["expert_parallel"] = {{"enabled", true}, {"autoep_size", p.ep}, {"preset_model", preset}};
    why.push_back(
        {"expert_parallel.autoep_size", std::to_string(p.ep), emit::plan_origin(in) + " (AutoEP)"});
    why.push_back({"expert_parallel.preset_model", preset,
                   "AutoEP's preset for the model's family (" + in.model.model_type + ")"});
  }
  if (p.cp > 1) {
    // DeepSpeed-Ulysses (ALST): runtime/config.py reads sequence_parallel_size and takes the
    // data-parallel world as world / it; the model's attention must be wrapped for it
    // (UlyssesSPAttentionHF.register_with_transformers, or Megatron-DeepSpeed's
    // --ds-sequence-parallel-size), which no config key does.
    j["sequence_parallel_size"] = p.cp;
    why.push_back({"sequence_parallel_size", std::to_string(p.cp),
                   emit::plan_origin(in) +
                       " (Ulysses; wrap the attention with UlyssesSPAttentionHF, as ALST does)"});
  }
  if (p.pp > 1 && p.recompute == Recompute::full) {
    j["pipeline"] = {{"activation_checkpoint_interval", 1}};
    why.push_back(
        {"pipeline.activation_checkpoint_interval", "1", "plan: full recompute of every layer"});
  }
  c.meta.notes = script_duties(in);
  c.meta.launch = launch_lines(in);
  emit::finish_meta(c.meta, in, "DeepSpeed config");

  // JSON has no comments: DeepSpeed reads top-level keys by name (runtime/config.py) and ignores
  // others, so the provenance travels in one extra top-level object.
  nlohmann::json provenance = nlohmann::json::array();
  for (const Provenance& x : why)
    provenance.push_back({{"setting", x.setting}, {"value", x.value}, {"source", x.source}});
  // The plan as `estimate --json` writes it, with what DeepSpeed's batch identity and the
  // launcher need beside it.
  nlohmann::json plan = to_json(p);
  plan["global_batch"] = tr.global_batch;
  plan["gradient_accumulation_steps"] = accumulation_steps(in);
  plan["nodes"] = in.cluster.nodes();
  plan["gpus_per_node"] = in.cluster.gpus_per_node;
  j["_shardplan"] = {
      {"about", "written by shardplan; DeepSpeed ignores unknown top-level keys"},
      {"plan", plan},
      {"long_run",
       {{"checkpoint_interval_steps", in.settings.checkpoint_interval_steps},
        {"checkpoint_interval_s", in.settings.checkpoint_interval_s},
        {"keep_last", in.settings.keep_last},
        {"timeout_minutes", in.settings.timeout_minutes},
        {"seed", in.settings.seed}}},
      {"summary", std::vector<std::string>(c.meta.header.begin(), c.meta.header.begin() + 4)},
      {"provenance", provenance},
      {"script", c.meta.notes},
      {"launch", c.meta.launch}};
  return c;
}

std::string write_deepspeed(const DeepSpeedConfig& c) {
  return c.config.dump(2) + "\n";
}

}  // namespace shardplan
