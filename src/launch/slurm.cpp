// A Slurm batch script beside the launcher config: one task per node, the launcher under srun,
// the collective-timeout settings, and the runbook's resume loop (every launch loads the newest
// checkpoint; a failed step is relaunched up to MAX_RESTARTS times, a preempted job requeued).
// sbatch/srun options from the Slurm manual pages (sbatch(1): --nodes, --ntasks-per-node,
// --gpus-per-node, --exclusive, --requeue, --signal; srun(1): --kill-on-bad-exit).
#include <fmt/format.h>

#include "common.hpp"

namespace shardplan {
namespace {

// The launch of one node's processes, run once per node by srun: the format's launch line after
// the torchrun rendezvous from Slurm's environment.
std::string node_launch(LauncherFormat f, const EmitInputs& in, const std::string& config) {
  const std::string rdzv = fmt::format(
      "torchrun --nnodes {} --nproc_per_node {} --rdzv_id \"$SLURM_JOB_ID\" --rdzv_backend c10d "
      "--rdzv_endpoint \"$MASTER_ADDR:$MASTER_PORT\"",
      in.cluster.nodes(), in.cluster.gpus_per_node);
  return launcher_row(f).node_launch(in, rdzv, config);
}

}  // namespace

std::string emit_slurm(LauncherFormat f, const EmitInputs& in) {
  const ClusterSpec& c = in.cluster;
  const std::string config = emit::config_path(in, f);
  const LongRunSettings& s = in.settings;
  std::vector<std::string> header = {
      fmt::format("Slurm batch script for {} on {} nodes x {} GPUs, written by shardplan",
                  in.model.name, c.nodes(), c.gpus_per_node),
      fmt::format("launcher: {} ({}); submit with: sbatch <this file>", to_string(f), config),
      fmt::format("resume: every launch loads the newest checkpoint ({} steps apart); a failed "
                  "step is relaunched up to $MAX_RESTARTS times, a preempted job requeued",
                  s.checkpoint_interval_steps),
      fmt::format("collective timeout {} min is in the launcher config (runbook); "
                  "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 makes a timed-out collective end the "
                  "process instead of hanging",
                  s.timeout_minutes),
      "set --time, --partition and --account for your cluster",
  };
  std::string out = "#!/bin/bash\n";
  out += fmt::format("#SBATCH --job-name=shardplan-{}\n", in.model.name);
  out +=
      fmt::format("#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node={}\n",
                  c.nodes(), c.gpus_per_node);
  out += "#SBATCH --exclusive\n#SBATCH --requeue\n#SBATCH --output=slurm-%j.out\n";
  out += emit::comment_block(header);
  out += "set -uo pipefail\n\n";
  out += "export MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"\n";
  out += "export MASTER_PORT=\"${MASTER_PORT:-29500}\"\n";
  for (const LaunchEnv& e : emit::launch_env(f, in)) {
    out += fmt::format("export {}={}{}\n", e.name, e.value,
                       e.comment.empty() ? "" : "   # " + e.comment);
  }
  out += "MAX_RESTARTS=\"${MAX_RESTARTS:-10}\"\n\n";
  out +=
      emit::resume_loop(fmt::format("srun --nodes={} --ntasks-per-node=1 --kill-on-bad-exit=1 {}",
                                    c.nodes(), node_launch(f, in, config)),
                        "$MAX_RESTARTS");
  return out;
}

}  // namespace shardplan
