// Helpers the launcher emitters share (not part of the public emit.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "documents.hpp"

namespace shardplan::emit {

/// "plan from flags" / "plan from plan.json: recommended".
std::string plan_origin(const EmitInputs& in);

/// Provenance of what every format carries: degrees, GPUs, batch identity, checkpoint interval,
/// keep-last-K, collective timeout, seed.
std::vector<Provenance> common_provenance(const EmitInputs& in);

/// Optimizer steps to train --tokens: ceil(tokens / (global batch x sequence)); none without it.
std::optional<long long> train_steps(const EmitInputs& in);

/// Rules every launcher shares (whole nodes).
std::vector<PlanProblem> common_problems(const EmitInputs& in);

/// common_problems, then every plan rule with `framework`'s capabilities (the rules `plan
/// --framework` searched with), so a launcher refuses nothing its planner would recommend.
std::vector<PlanProblem> framework_problems(const EmitInputs& in, Framework framework);

/// Fills meta.header: what the document is, the plan, the batch identity, the estimate and
/// runbook figures, then provenance, the script's duties and the launch command.
void finish_meta(EmitMeta& meta, const EmitInputs& in, const std::string& what);

/// "log tokens/s every step (predicted N); flag a straggler when ...": the runbook's threshold.
std::string straggler_note(const EmitInputs& in);

/// "AdamW(lr=..., betas=(...), eps=..., weight_decay=...); N warm-up steps, then cosine to ...;
/// clip ...: <recipe>": the optimizer and schedule for launchers whose config has no keys for them.
std::string optimizer_duty(const EmitInputs& in);
/// Where the optimizer settings came from: the flags given (last first), then the recipe.
std::string optimizer_source(const OptimizerSettings& o);

/// The environment every scheduler's job sets for the launch (Slurm exports it, the TrainJob and
/// the SkyPilot task list it): a collective that times out ends the process instead of hanging
/// (the runbook's timeout is in the config), NCCL says what went wrong, then the launcher's own.
std::vector<LaunchEnv> launch_env(LauncherFormat format, const EmitInputs& in);

/// The runbook's resume loop around a launch, the same for every scheduler: up to `restarts`
/// relaunches (a number, or a shell variable such as $MAX_RESTARTS), each loading the newest
/// checkpoint, a minute apart so that a failed peer can come back; exit 1 when all fail.
std::string resume_loop(const std::string& launch, const std::string& restarts);

/// Lines as a "# " comment block.
std::string comment_block(const std::vector<std::string>& lines);

/// The path the launch line names: -o's path, or the format's usual file (ds_config.json ...)
/// for stdout.
std::string config_path(const EmitInputs& in, LauncherFormat format);

/// "--nnodes N --nproc_per_node G" for torchrun.
std::string torchrun_rendezvous(const EmitInputs& in);

/// torchtitan's MoE parallelism keys: expert_tensor_parallel_degree, and the DualPipeV
/// expert-parallel overlap switch as the plan priced it (torchtitan_moe.cpp).
void titan_moe_keys(const EmitInputs& in, toml::table& parallelism, std::vector<Provenance>& why);
/// What the script must change for torchtitan's MoE to balance experts as the model does.
void titan_moe_notes(const EmitInputs& in, std::vector<std::string>& notes);
/// What torchtitan v0.2.2 cannot run of the plan's MoE execution.
void titan_moe_problems(const EmitInputs& in, std::vector<PlanProblem>& out);

}  // namespace shardplan::emit
