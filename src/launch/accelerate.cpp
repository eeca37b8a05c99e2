// accelerate launch config YAML with FSDP2 (huggingface/accelerate 1.14/1.15). Keys read from
// commands/config/config_args.py (unknown top-level keys are an error), commands/launch.py and
// utils/launch.py (what reaches the script as FSDP_* and PARALLELISM_CONFIG_* variables).
#include <fmt/format.h>

#include "common.hpp"
#include "shardplan/error.hpp"
#include "shardplan/offload.hpp"

namespace shardplan {
namespace {

// The recipe row's mixed_precision (profiles/precisions/*.json launchers.accelerate).
std::string mixed_precision(const PrecisionRecipe& r) {
  const std::vector<std::string>* value = r.flags_for("accelerate");
  SHARDPLAN_CHECK(value != nullptr && value->size() == 1,
                  "a precision recipe row without accelerate's one mixed_precision value");
  return value->front();
}

std::vector<std::string> script_duties(const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const LongRunSettings& s = in.settings;
  std::vector<std::string> n = {
      fmt::format(
          "give each process's DataLoader batch_size={} (the micro-batch); the launch line sets "
          "ACCELERATE_GRADIENT_ACCUMULATION_STEPS={}, which Accelerator() reads (the YAML has no "
          "key for it)",
          p.micro_batch, accumulation_steps(in)),
      fmt::format("Accelerator(project_config=ProjectConfiguration(project_dir=..., "
                  "automatic_checkpoint_naming=True, "
                  "total_limit={})): save_state() keeps the last {}",
                  s.keep_last, s.keep_last),
      fmt::format("every {} steps call accelerator.save_state() (model, optimizer, scheduler, RNG "
                  "states); at start "
                  "accelerator.load_state() from the newest checkpoint",
                  s.checkpoint_interval_steps),
      "Accelerator(dataloader_config=DataLoaderConfiguration(use_stateful_dataloader=True)) so "
      "save_state stores the "
      "loader's position (or accelerator.skip_first_batches after a resume)",
      fmt::format("accelerate.utils.set_seed({}) before building the model and data", s.seed),
      fmt::format("Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(minutes={}"
                  "))]): the timeout "
                  "has no YAML key (accelerate's NCCL default is 600 s)",
                  s.timeout_minutes),
      fmt::format("create the optimizer the plan assumed ({})", to_string(in.training.optimizer)),
      emit::optimizer_duty(in),
      emit::straggler_note(in),
  };
  if (in.training.precision == Precision::bf16_pure) {
    n.push_back(
        "bf16-pure: load the model with from_pretrained(..., torch_dtype=torch.bfloat16) (or "
        "model.to(torch.bfloat16)) before accelerator.prepare(); mixed_precision 'no' then keeps "
        "weights, gradients and optimizer states in bf16 with no fp32 master");
  }
  if (p.tp > 1)
    n.push_back(
        "tensor parallelism uses the model's tp_plan (transformers models that define one)");
  if (p.recompute == Recompute::selective) {
    n.push_back(
        "selective recompute has no accelerate key: use flash attention (attn_implementation), "
        "which keeps no "
        "s x s scores, the term selective recompute removes");
  }
  if (p.recompute == Recompute::full && p.zero == 0) {
    n.push_back("recompute every layer: model.gradient_checkpointing_enable()");
  }
  return n;
}

}  // namespace

std::vector<PlanProblem> accelerate_problems(const EmitInputs& in) {
  return emit::framework_problems(in, Framework::fsdp);
}

AccelerateConfig emit_accelerate(const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const ClusterSpec& cl = in.cluster;
  AccelerateConfig c;
  YAML::Node& y = c.config;
  std::vector<Provenance>& why = c.meta.provenance;
  why = emit::common_provenance(in);
  const bool fsdp = p.zero >= 2;
  y["compute_environment"] = "LOCAL_MACHINE";
  y["distributed_type"] = fsdp ? "FSDP" : "MULTI_GPU";
  why.push_back(
      {"distributed_type", fsdp ? "FSDP" : "MULTI_GPU",
       fsdp ? fmt::format("ZeRO-{}: FSDP2", p.zero) : "ZeRO-0: plain DDP (FSDP2 has no NO_SHARD)"});
  y["mixed_precision"] = mixed_precision(in.training.recipe);
  if (in.training.precision == Precision::bf16_pure) {
    why.push_back({"mixed_precision", "no",
                   "bf16-pure: no autocast and no fp32 master copy; the script loads the model "
                   "in bf16, so weights, gradients and AdamW states are bf16"});
  }
  y["num_machines"] = cl.nodes();
  y["num_processes"] = cl.gpus;
  why.push_back({"num_processes", std::to_string(cl.gpus),
                 "all GPUs: accelerate starts num_processes / num_machines "
                 "per machine"});
  y["machine_rank"] = 0;
  y["main_process_port"] = 29500;
  y["rdzv_backend"] = "static";
  y["same_network"] = true;
  y["gpu_ids"] = "all";
  y["use_cpu"] = false;
  y["debug"] = false;
  y["main_training_function"] = "main";
  y["enable_cpu_affinity"] = false;
  if (fsdp) {
    YAML::Node f;
    f["fsdp_version"] = 2;
    f["fsdp_reshard_after_forward"] = p.zero == 3;
    f["fsdp_auto_wrap_policy"] = "TRANSFORMER_BASED_WRAP";
    f["fsdp_state_dict_type"] = "SHARDED_STATE_DICT";
    f["fsdp_activation_checkpointing"] = p.recompute == Recompute::full;
    // FSDP CPUOffload(offload_params=True): weights, gradients and the optimizer step on the CPU.
    f["fsdp_offload_params"] = p.offload.any();
    if (p.offload.any()) {
      why.push_back({"fsdp_config.fsdp_offload_params", "true",
                     "plan: weights and optimizer in host memory (FSDP CPU offload)"});
    }
    f["fsdp_cpu_ram_efficient_loading"] = true;
    y["fsdp_config"] = f;
    why.push_back(
        {"fsdp_config.fsdp_reshard_after_forward", p.zero == 3 ? "true" : "false",
         fmt::format("ZeRO-{} (fsdp1_vs_fsdp2.md: true = FULL_SHARD, false = SHARD_GRAD_OP)",
                     p.zero)});
    why.push_back({"fsdp_config.fsdp_state_dict_type", "SHARDED_STATE_DICT",
                   "each rank saves its shard, as the runbook sized the write"});
  }
  if (p.tp > 1 || p.cp > 1 || p.hybrid_shard()) {
    // HSDP: FSDP2 over accelerate's (dp_replicate, dp_shard) mesh (ParallelismConfig).
    YAML::Node pc;
    pc["parallelism_config_dp_replicate_size"] = p.dp_replicate();
    pc["parallelism_config_dp_shard_size"] = p.shard_degree();
    pc["parallelism_config_tp_size"] = p.tp;
    // Ulysses is accelerate's sp_size with the deepspeed backend (parallelism_config.py); ring
    // attention its cp_size.
    if (in.training.context_parallel == ContextParallel::ulysses) {
      pc["parallelism_config_sp_size"] = p.cp;
      pc["parallelism_config_sp_backend"] = "deepspeed";
    } else {
      pc["parallelism_config_cp_size"] = p.cp;
    }
    y["parallelism_config"] = pc;
    why.push_back(
        {"parallelism_config",
         p.hybrid_shard()
             ? fmt::format("dp_replicate {} x dp_shard {} x tp {} x cp {}", p.dp_replicate(),
                           p.shard_degree(), p.tp, p.cp)
             : fmt::format("dp_shard {} x tp {} x cp {}", p.dp, p.tp, p.cp),
         p.hybrid_shard() ? "HSDP: FSDP2 shards inside groups of dp_shard ranks and replicates "
                            "across dp_replicate; accelerate checks the product is num_processes"
                          : "the plan's degrees; accelerate checks their product is num_processes"});
  }
  c.meta.notes = script_duties(in);
  const std::string env =
      fmt::format("ACCELERATE_GRADIENT_ACCUMULATION_STEPS={}", accumulation_steps(in));
  const std::string config = emit::config_path(in, LauncherFormat::accelerate);
  c.meta.launch = {cl.nodes() > 1
                       ? fmt::format("on each of the {} machines: {} accelerate launch "
                                     "--config_file {} --machine_rank "
                                     "$NODE_RANK --main_process_ip $MASTER_ADDR train.py",
                                     cl.nodes(), env, config)
                       : env + " accelerate launch --config_file " + config + " train.py"};
  if (cl.nodes() > 1) {
    c.meta.launch.push_back(fmt::format(
        "or under SLURM: srun --nodes={} --ntasks-per-node=1 with NODE_RANK=$SLURM_NODEID",
        cl.nodes()));
  }
  emit::finish_meta(c.meta, in, "accelerate FSDP config");
  return c;
}

std::string write_accelerate(const AccelerateConfig& c) {
  YAML::Emitter out;
  out << c.config;
  return emit::comment_block(c.meta.header) + "\n" + out.c_str() + "\n";
}

}  // namespace shardplan
