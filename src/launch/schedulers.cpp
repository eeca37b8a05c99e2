// The job around a launch, for the schedulers training runs on besides Slurm (slurm.cpp): a
// Kubeflow Trainer v2 TrainJob and a SkyPilot task for the emitted config, and the probe as a
// Slurm batch job or a Kubeflow MPIJob. Each carries the same launch line, environment, bounded
// timeouts and restart policy in its scheduler's terms, and topology placement where the plan's
// tensor / expert groups need a scale-up domain that spans hosts (NVL72 racks).
//
// Fields, from the schedulers' own definitions:
// - TrainJob: trainer.kubeflow.org/v1alpha1, CRD manifests/base/crds/trainer.kubeflow.org_
//   trainjobs.yaml of github.com/kubeflow/trainer (spec.runtimeRef required; spec.trainer.image,
//   command, env, numNodes, numProcPerNode, resourcesPerNode); the torch-distributed
//   ClusterTrainingRuntime (manifests/base/runtimes/torch_distributed.yaml) sets PET_NNODES,
//   PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT (pkg/constants), which
//   torchrun reads as its --nnodes ... flags.
// - MPIJob: kubeflow.org/v2beta1, CRD deploy/v2beta1/mpi-operator.yaml of
//   github.com/kubeflow/mpi-operator (spec.mpiReplicaSpecs required, Launcher and Worker;
//   slotsPerWorker; runPolicy.activeDeadlineSeconds, backoffLimit, cleanPodPolicy;
//   mpiImplementation OpenMPI | Intel | MPICH).
// - SkyPilot task YAML (docs.skypilot.co reference/yaml-spec; sky/utils/schemas.py): name,
//   num_nodes, resources.accelerators "H100:8", resources.network_tier, resources.job_recovery
//   {strategy, max_restarts_on_errors}, envs, run; SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS,
//   SKYPILOT_NUM_NODES, SKYPILOT_NUM_GPUS_PER_NODE in the run's environment.
// - Kueue topology-aware scheduling: the pod annotations kueue.x-k8s.io/podset-preferred-topology
//   and, for groups of pods that must share a domain, kueue.x-k8s.io/podset-slice-required-
//   topology with kueue.x-k8s.io/podset-slice-size (kueue.sigs.k8s.io, "Topology Aware
//   Scheduling"); nvidia.com/gpu.clique, the NVLink-domain label NVIDIA's GPU operator puts on
//   GB200 / GB300 nodes.
// - Slurm: sbatch(1) --segment (23.11+, with the topology/block plugin, so an NVL72 rack's nodes
//   come together) and srun(1) --mpi=pmix; pyxis's srun --container-image / --container-mounts.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common.hpp"
#include "shardplan/error.hpp"

namespace shardplan {
namespace {

// The scale-up group the plan's collectives need inside one NVLink domain, in GPUs.
int scale_up_group(const ParallelPlan& p) {
  return std::max(p.tp * p.cp, p.ep * p.expert_tp());
}

// Nodes that must share a scale-up domain: > 1 when the plan's groups span hosts of a rack.
int nodes_per_group(const EmitInputs& in) {
  const ClusterSpec& c = in.cluster;
  if (!c.rack_scale()) return 1;
  return std::max(1, std::min(scale_up_group(in.plan), c.domain_gpus()) / c.gpus_per_node);
}

std::string accelerator_name(const ClusterSpec& c) {
  std::string name = c.gpu.name;
  const size_t dash = name.find('-');  // "H100-SXM" -> "H100": SkyPilot's accelerator names
  if (dash != std::string::npos) name = name.substr(0, dash);
  return name;
}

void header(YAML::Emitter& y, const std::vector<std::string>& lines) {
  for (const std::string& l : lines) y << YAML::Comment(l) << YAML::Newline;
}

}  // namespace

std::string emit_k8s(LauncherFormat f, const EmitInputs& in, const SchedulerOptions& o) {
  const ClusterSpec& c = in.cluster;
  const std::string config = emit::config_path(in, f);
  const int group_nodes = nodes_per_group(in);
  // torchrun takes --nnodes, --nproc_per_node, --node_rank and the master from PET_*; the
  // launchers that read NODE_RANK / MASTER_ADDR themselves (Megatron's script, accelerate) get
  // them from the same variables.
  const std::string launch =
      "NODE_RANK=\"$PET_NODE_RANK\" MASTER_ADDR=\"$PET_MASTER_ADDR\" "
      "MASTER_PORT=\"$PET_MASTER_PORT\" " +
      launcher_row(f).node_launch(in, "torchrun", config);
  YAML::Emitter y;
  header(y, {fmt::format("Kubeflow Trainer v2 TrainJob for {} on {} nodes x {} GPUs, written by "
                         "shardplan",
                         in.model.name, c.nodes(), c.gpus_per_node),
             fmt::format("launcher: {} ({}, which the image must hold); submit with: kubectl "
                         "apply -f <this file>",
                         to_string(f), config),
             "runtime: the torch-distributed ClusterTrainingRuntime (Kubeflow Trainer v2); it "
             "sets PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR for torchrun",
             fmt::format("resume: every launch loads the newest checkpoint ({} steps apart); "
                         "a failed launch is retried in the pod up to {} times",
                         in.settings.checkpoint_interval_steps, o.restarts),
             group_nodes > 1
                 ? fmt::format("topology: tensor / expert groups of {} GPUs span {} nodes of a "
                               "{}-GPU NVLink domain; Kueue keeps each {} pods in one "
                               "'{}' domain (topology-aware scheduling)",
                               scale_up_group(in.plan), group_nodes, c.domain_gpus(), group_nodes,
                               o.topology_label)
                 : "topology: every tensor / expert group stays inside one node"});
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "trainer.kubeflow.org/v1alpha1";
  y << YAML::Key << "kind" << YAML::Value << "TrainJob";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << o.name;
  if (!o.name_space.empty()) y << YAML::Key << "namespace" << YAML::Value << o.name_space;
  if (!o.queue.empty()) {
    y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap << YAML::Key
      << "kueue.x-k8s.io/queue-name" << YAML::Value << o.queue << YAML::EndMap;
  }
  y << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "runtimeRef" << YAML::Value << YAML::BeginMap << YAML::Key << "name"
    << YAML::Value << "torch-distributed" << YAML::EndMap;
  y << YAML::Key << "trainer" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "image" << YAML::Value << o.image;
  y << YAML::Key << "command" << YAML::Value << YAML::BeginSeq << "bash"
    << "-c" << YAML::Literal
    << "set -uo pipefail\n" + emit::resume_loop(launch, std::to_string(o.restarts)) << YAML::EndSeq;
  y << YAML::Key << "numNodes" << YAML::Value << c.nodes();
  y << YAML::Key << "numProcPerNode" << YAML::Value << c.gpus_per_node;
  y << YAML::Key << "resourcesPerNode" << YAML::Value << YAML::BeginMap << YAML::Key << "limits"
    << YAML::Value << YAML::BeginMap << YAML::Key << "nvidia.com/gpu" << YAML::Value
    << c.gpus_per_node << YAML::EndMap << YAML::EndMap;
  y << YAML::Key << "env" << YAML::Value << YAML::BeginSeq;
  for (const LaunchEnv& e : emit::launch_env(f, in)) {
    y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << e.name << YAML::Key << "value"
      << YAML::Value << YAML::DoubleQuoted << e.value << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::EndMap;  // trainer
  if (group_nodes > 1) {
    // The pods of each group of nodes share one NVLink domain: a patch of the runtime's "node"
    // job's pod template with Kueue's topology annotations.
    y << YAML::Key << "runtimePatches" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
    y << YAML::Key << "manager" << YAML::Value << "shardplan";
    y << YAML::Key << "trainingRuntimeSpec" << YAML::Value << YAML::BeginMap << YAML::Key
      << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "spec" << YAML::Value
      << YAML::BeginMap << YAML::Key << "replicatedJobs" << YAML::Value << YAML::BeginSeq
      << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "node" << YAML::Key << "template"
      << YAML::Value << YAML::BeginMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap
      << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "metadata"
      << YAML::Value << YAML::BeginMap << YAML::Key << "annotations" << YAML::Value
      << YAML::BeginMap << YAML::Key << "kueue.x-k8s.io/podset-slice-required-topology"
      << YAML::Value << o.topology_label << YAML::Key << "kueue.x-k8s.io/podset-slice-size"
      << YAML::Value << YAML::DoubleQuoted << std::to_string(group_nodes) << YAML::EndMap
      << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap
      << YAML::EndSeq << YAML::EndMap << YAML::EndMap << YAML::EndMap;
    y << YAML::EndMap << YAML::EndSeq;
  }
  y << YAML::EndMap << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

std::string emit_skypilot(LauncherFormat f, const EmitInputs& in, const SchedulerOptions& o) {
  const ClusterSpec& c = in.cluster;
  const std::string config = emit::config_path(in, f);
  const std::string torchrun =
      "torchrun --nnodes \"$SKYPILOT_NUM_NODES\" --nproc_per_node "
      "\"$SKYPILOT_NUM_GPUS_PER_NODE\" --node_rank \"$SKYPILOT_NODE_RANK\" --master_addr "
      "\"$MASTER_ADDR\" --master_port \"$MASTER_PORT\"";
  const std::string launch =
      "NODE_RANK=\"$SKYPILOT_NODE_RANK\" " + launcher_row(f).node_launch(in, torchrun, config);
  const std::string run =
      "export MASTER_ADDR=\"$(echo \"$SKYPILOT_NODE_IPS\" | head -n 1)\"\n"
      "export MASTER_PORT=\"${MASTER_PORT:-29500}\"\nset -uo pipefail\n" +
      emit::resume_loop(launch, std::to_string(o.restarts));
  YAML::Emitter y;
  header(y, {fmt::format("SkyPilot task for {} on {} nodes x {} {}, written by shardplan",
                         in.model.name, c.nodes(), c.gpus_per_node, accelerator_name(c)),
             fmt::format("launcher: {} ({}, which the workdir must hold); submit with: sky jobs "
                         "launch <this file> (managed: recovered on preemption and on errors)",
                         to_string(f), config),
             fmt::format("resume: every launch loads the newest checkpoint ({} steps apart); a "
                         "failed launch is retried on the nodes up to {} times, a failed job "
                         "recovered by SkyPilot up to {} times",
                         in.settings.checkpoint_interval_steps, o.restarts, o.restarts),
             nodes_per_group(in) > 1
                 ? "topology: the plan's tensor / expert groups span hosts of an NVLink domain; "
                   "SkyPilot cannot place by domain, so ask the provider for whole racks"
                 : "topology: every tensor / expert group stays inside one node"});
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << o.name;
  y << YAML::Key << "num_nodes" << YAML::Value << c.nodes();
  y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "accelerators" << YAML::Value
    << fmt::format("{}:{}", accelerator_name(c), c.gpus_per_node);
  if (c.nodes() > 1) y << YAML::Key << "network_tier" << YAML::Value << "best";
  if (!o.image.empty()) y << YAML::Key << "image_id" << YAML::Value << "docker:" + o.image;
  y << YAML::Key << "job_recovery" << YAML::Value << YAML::BeginMap << YAML::Key << "strategy"
    << YAML::Value << "FAILOVER" << YAML::Key << "max_restarts_on_errors" << YAML::Value
    << o.restarts << YAML::EndMap;
  y << YAML::EndMap;
  y << YAML::Key << "envs" << YAML::Value << YAML::BeginMap;
  for (const LaunchEnv& e : emit::launch_env(f, in)) {
    y << YAML::Key << e.name << YAML::Value << YAML::DoubleQuoted << e.value;
  }
  y << YAML::EndMap;
  y << YAML::Key << "run" << YAML::Value << YAML::Literal << run;
  y << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

std::string probe_slurm_job(const ProbeJob& j) {
  std::vector<std::string> lines = {
      fmt::format("shardplan probe as a Slurm job: {} nodes x {} ranks, written by shardplan",
                  j.nodes, j.ranks_per_node),
      "submit with: sbatch <this file>; the profile lands at " + j.out_path +
          " (on storage every node shares); plan with --cluster " + j.out_path,
      fmt::format("bounded: --time {} min from the probe's forecast ({:.0f} s) with margin; "
                  "a silent rank ends the probe after --timeout-s with a report (exit 3)",
                  static_cast<int>(std::ceil(j.time_limit_s / 60)), j.forecast_s),
  };
  if (j.nodes_per_domain > 1) {
    lines.push_back(
        fmt::format("--segment={}: an NVLink domain's nodes come together (Slurm "
                    "23.11+ with the topology/block plugin)",
                    j.nodes_per_domain));
  }
  if (!j.image.empty()) lines.push_back("container: pyxis/enroot (srun --container-image)");
  std::string out = "#!/bin/bash\n";
  out += "#SBATCH --job-name=shardplan-probe\n";
  out +=
      fmt::format("#SBATCH --nodes={}\n#SBATCH --ntasks-per-node={}\n", j.nodes, j.ranks_per_node);
  if (j.gpus_per_node > 0) out += fmt::format("#SBATCH --gpus-per-node={}\n", j.gpus_per_node);
  out += "#SBATCH --exclusive\n";
  const long minutes = static_cast<long>(std::ceil(j.time_limit_s / 60));
  out += fmt::format("#SBATCH --time={:02d}:{:02d}:00\n", minutes / 60, minutes % 60);
  if (j.nodes_per_domain > 1) out += fmt::format("#SBATCH --segment={}\n", j.nodes_per_domain);
  out += "#SBATCH --output=shardplan-probe-%j.out\n";
  out += emit::comment_block(lines);
  out += "set -euo pipefail\n";
  std::string container;
  if (!j.image.empty()) {
    const std::string dir = j.out_path.substr(0, j.out_path.find_last_of('/') + 1);
    container = fmt::format(" --container-image={}{}", j.image,
                            dir.empty() ? "" : " --container-mounts=" + dir + ":" + dir);
  }
  out +=
      fmt::format("srun --mpi={} --kill-on-bad-exit=1{} {}\n", j.mpi, container, j.command_line());
  return out;
}

std::string probe_k8s_job(const ProbeJob& j) {
  const std::string dir = j.out_path.substr(0, j.out_path.find_last_of('/'));
  YAML::Emitter y;
  header(y,
         {fmt::format("shardplan probe as a Kubeflow MPIJob: {} workers x {} ranks, written "
                      "by shardplan",
                      j.nodes, j.ranks_per_node),
          "submit with: kubectl apply -f <this file> (needs the MPI Operator, "
          "kubeflow.org/v2beta1); the launcher runs mpirun over ssh, one rank per GPU: build "
          "the image on the operator's mpioperator/openmpi base, whose workers run sshd",
          "the profile lands at " + j.out_path +
              (j.volume_claim.empty() ? " inside the launcher pod: give --volume-claim to keep it"
                                      : " on the volume claim " + j.volume_claim),
          fmt::format("bounded: activeDeadlineSeconds {} from the probe's forecast ({:.0f} s) "
                      "with margin",
                      static_cast<long>(j.time_limit_s), j.forecast_s)});
  auto volume = [&](YAML::Emitter& e) {
    if (j.volume_claim.empty()) return;
    e << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key
      << "name" << YAML::Value << "profile" << YAML::Key << "persistentVolumeClaim" << YAML::Value
      << YAML::BeginMap << YAML::Key << "claimName" << YAML::Value << j.volume_claim << YAML::EndMap
      << YAML::EndMap << YAML::EndSeq;
  };
  auto mount = [&](YAML::Emitter& e) {
    if (j.volume_claim.empty()) return;
    e << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key
      << "name" << YAML::Value << "profile" << YAML::Key << "mountPath" << YAML::Value
      << (dir.empty() ? "/profile" : dir) << YAML::EndMap << YAML::EndSeq;
  };
  y << YAML::BeginMap;
  y << YAML::Key << "apiVersion" << YAML::Value << "kubeflow.org/v2beta1";
  y << YAML::Key << "kind" << YAML::Value << "MPIJob";
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name"
    << YAML::Value << "shardplan-probe" << YAML::EndMap;
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "slotsPerWorker" << YAML::Value << j.ranks_per_node;
  y << YAML::Key << "mpiImplementation" << YAML::Value << "OpenMPI";
  y << YAML::Key << "runPolicy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "activeDeadlineSeconds" << YAML::Value << static_cast<long>(j.time_limit_s);
  y << YAML::Key << "backoffLimit" << YAML::Value << 0;
  y << YAML::Key << "cleanPodPolicy" << YAML::Value << "Running";
  y << YAML::EndMap;
  y << YAML::Key << "mpiReplicaSpecs" << YAML::Value << YAML::BeginMap;
  // The launcher: mpirun over the workers (the operator writes the hostfile), no GPU of its own.
  y << YAML::Key << "Launcher" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "replicas" << YAML::Value << 1;
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "spec"
    << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << "launcher";
  y << YAML::Key << "image" << YAML::Value << j.image;
  // Every word a quoted string: Kubernetes takes a command's items as strings only, and a bare
  // 256 would be read as a number.
  y << YAML::Key << "command" << YAML::Value << YAML::BeginSeq;
  std::vector<std::string> words = {"mpirun",   "--allow-run-as-root",
                                    "-np",      std::to_string(j.nodes * j.ranks_per_node),
                                    "--map-by", fmt::format("ppr:{}:node", j.ranks_per_node)};
  for (const std::string& a : j.command()) words.push_back(a);
  for (const std::string& w : words) y << YAML::DoubleQuoted << w;
  y << YAML::EndSeq;
  mount(y);
  y << YAML::EndMap << YAML::EndSeq;
  volume(y);
  y << YAML::EndMap << YAML::EndMap;  // spec, template
  y << YAML::EndMap;                  // Launcher
  y << YAML::Key << "Worker" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "replicas" << YAML::Value << j.nodes;
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  if (j.nodes_per_domain > 1) {
    y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "annotations"
      << YAML::Value << YAML::BeginMap << YAML::Key << "kueue.x-k8s.io/podset-preferred-topology"
      << YAML::Value << j.topology_label << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << "worker";
  y << YAML::Key << "image" << YAML::Value << j.image;
  if (j.gpus_per_node > 0) {
    y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap << YAML::Key << "limits"
      << YAML::Value << YAML::BeginMap << YAML::Key << "nvidia.com/gpu" << YAML::Value
      << j.gpus_per_node << YAML::EndMap << YAML::EndMap;
  }
  mount(y);
  y << YAML::EndMap << YAML::EndSeq;
  volume(y);
  y << YAML::EndMap << YAML::EndMap;  // spec, template
  y << YAML::EndMap;                  // Worker
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

std::vector<std::string> ProbeJob::command() const {
  std::vector<std::string> out = {shardplan, "probe", "--out", out_path};
  out.insert(out.end(), probe_args.begin(), probe_args.end());
  return out;
}

std::string ProbeJob::command_line() const {
  std::string line;
  for (const std::string& a : command()) {
    const bool plain = a.find_first_of(" \t'\"$`\\;&|<>*?()[]{}") == std::string::npos;
    line += (line.empty() ? "" : " ") + (plain && !a.empty() ? a : "'" + a + "'");
  }
  return line;
}

}  // namespace shardplan
