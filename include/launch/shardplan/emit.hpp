// Launcher configs from a plan: DeepSpeed JSON, a Megatron-LM pretrain_gpt.py script, a
// torchtitan (v0.2.2) TOML and an accelerate FSDP YAML, each with the plan's degrees and batch
// sizes, the long-run settings of the runbook, the launch command, and where every number came
// from. This is what the CLI sees; the document objects each launcher builds are internal
// (src/launch/documents.hpp), so the TOML and YAML libraries stay inside the launch library.
#pragma once

#include <string>
#include <vector>

#include "shardplan/launcher_config.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/runbook.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

LauncherFormat parse_launcher_format(const std::string& text, const std::string& field);
/// The format a framework is launched with by default: the first launcher row that serves it
/// (fsdp: accelerate). InputError naming --format when no launcher serves it.
LauncherFormat default_format(Framework framework);
/// The framework a launcher format runs (accelerate: fsdp): the first its row serves.
Framework framework_of(LauncherFormat format);

/// Long runs checkpoint on wall-clock time, not on epochs; 30 minutes is the default interval when
/// the user names none (--checkpoint-interval auto takes the runbook's Young interval instead).
inline constexpr double kDefaultCheckpointIntervalS = 1800;
/// Megatron-LM's --seed default (RNGConfig.seed = 1234), used by every format unless --seed.
inline constexpr int kDefaultSeed = 1234;

enum class IntervalChoice { default_interval, young, given };

/// The long-run settings every format carries, each with where it came from.
struct LongRunSettings {
  int checkpoint_interval_steps = 0;
  double checkpoint_interval_s = 0;  // the target; the config holds it rounded to whole steps
  std::string interval_source;
  int keep_last = 0;
  int timeout_minutes = 0;
  long long seed = kDefaultSeed;  // 0..2^32-1 (--seed)
  std::string seed_source;
};

/// Settings from the runbook: its interval (Young's, the default, or the given one, as the
/// runbook was asked), its keep-last-K and collective timeout, and the random seed.
LongRunSettings long_run_settings(const Runbook& runbook, IntervalChoice choice, long long seed,
                                  bool seed_given);

/// How the learning rate falls after warm-up (Megatron-LM's --lr-decay-style names; WSD holds
/// the peak, then decays over the last part of the schedule).
enum class LrDecay { cosine, linear, constant, wsd };
const char* to_string(LrDecay d);
LrDecay parse_lr_decay(const std::string& text, const std::string& field);

/// The optimizer's hyper-parameters and schedule, with where they came from: a model family's
/// published recipe, or the emit flags (--lr, --min-lr, --warmup-steps, ...) over it.
struct OptimizerSettings {
  double lr = 0;  // peak; 0 = not resolved (emitters take the recipe)
  double min_lr = 0;
  int warmup_steps = 0;
  double warmup_tokens = 0;  // GPT-3 warms up over tokens: steps = ceil(tokens / tokens per step)
  LrDecay decay = LrDecay::cosine;
  double decay_end_fraction = 1;  // share of the run at which the lr reaches min_lr and stays
  double wsd_decay_fraction = 0;  // WSD: share of the run spent in the final decay
  double weight_decay = 0;
  double clip_grad = 0;
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  double mtp_loss_scale = 0;  // the multi-token-prediction loss weight; 0 = the launcher's default
  std::string recipe;         // "GPT-3 175B (Brown et al. 2020 ...)" or the fallback's name
  std::vector<std::string> given;  // the emit flags that replaced recipe values
  std::vector<std::string> notes;  // what the recipe does that the config cannot say
};

/// The published recipe of the model's family (GPT-3, Llama 2, Llama 3, DeepSeek-V3); other
/// families get Llama 2's recipe for their size, said in `recipe`.
OptimizerSettings published_recipe(const ModelSpec& m);

/// Warm-up steps at this batch: warmup_steps, or warmup_tokens in whole steps.
int warmup_steps_at(const OptimizerSettings& o, const TrainingSpec& t);
/// The steps the learning rate decays over in a run of `steps`: decay_end_fraction of it, at
/// least 1 (Megatron asserts the warm-up is shorter).
long long decay_steps(const OptimizerSettings& o, long long steps);

/// Everything an emitter reads.
struct EmitInputs {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  Estimate estimate;
  Runbook runbook;
  LongRunSettings settings;
  std::string plan_source;  // "flags" or the plan file and pick
  std::string output_path;  // where the document is written (-o); empty: the format's usual name
  OptimizerSettings optimizer = {};  // lr == 0: the model family's published recipe
};

/// in.optimizer when resolved, else published_recipe(in.model).
OptimizerSettings optimizer_of(const EmitInputs& in);

/// What the launcher cannot express for this plan, naming the flag to change; empty when it can.
std::vector<PlanProblem> deepspeed_problems(const EmitInputs& in);
std::vector<PlanProblem> megatron_problems(const EmitInputs& in);
std::vector<PlanProblem> torchtitan_problems(const EmitInputs& in);
std::vector<PlanProblem> accelerate_problems(const EmitInputs& in);
std::vector<PlanProblem> launcher_problems(LauncherFormat f, const EmitInputs& in);

/// The text of one format; requires launcher_problems(f, in) to be empty.
std::string emit_text(LauncherFormat f, const EmitInputs& in);

/// A Slurm batch script that runs the config `emit_text(f, in)` wrote at in.output_path (or the
/// format's usual name): nodes, one task per node, GPUs per node, the launch under srun, NCCL
/// timeout behaviour and the checkpoint-resume loop.
std::string emit_slurm(LauncherFormat f, const EmitInputs& in);

/// What the Kubernetes and SkyPilot jobs need beyond the plan (schedulers.cpp).
struct SchedulerOptions {
  std::string name = "shardplan-train";
  std::string image = "nvcr.io/nvidia/pytorch:25.08-py3";  // the training container
  std::string name_space;  // Kubernetes namespace ("" = the current one)
  std::string queue;       // Kueue local queue ("" = none)
  std::string topology_label = "nvidia.com/gpu.clique";  // the NVLink-domain node label
  int restarts = 10;  // relaunches after a failure, each resuming from the newest checkpoint
};
/// A Kubeflow Trainer v2 TrainJob (torch-distributed runtime) that runs the config
/// `emit_text(f, in)` wrote: nodes, GPUs per node, the launch with the resume loop, the Slurm
/// script's environment, and Kueue topology annotations when the plan's tensor / expert groups
/// span the hosts of an NVLink domain.
std::string emit_k8s(LauncherFormat f, const EmitInputs& in, const SchedulerOptions& o);
/// A SkyPilot task (sky jobs launch) for the same launch: num_nodes, accelerators, job recovery.
std::string emit_skypilot(LauncherFormat f, const EmitInputs& in, const SchedulerOptions& o);

/// The probe as a cluster job: `shardplan probe` under srun (Slurm) or mpirun in a Kubeflow
/// MPIJob, one rank per GPU, bounded in time, writing its profile to `out_path`.
struct ProbeJob {
  int nodes = 1;
  int ranks_per_node = 1;
  int gpus_per_node = 0;     // 0: a CPU probe (--backend mpi): no GPU requested
  int nodes_per_domain = 1;  // > 1: an NVLink domain spans hosts (Slurm --segment, Kueue hint)
  std::string image;         // container image ("" on Slurm: the host's binary)
  std::string out_path;      // where the profile is written (shared storage)
  std::string volume_claim;  // Kubernetes: the PVC mounted at out_path's folder
  std::string topology_label = "nvidia.com/gpu.clique";
  std::string mpi = "pmix";             // srun --mpi
  std::string shardplan = "shardplan";  // the binary's path on the nodes
  std::vector<std::string> probe_args;  // after `probe --out PATH`
  double forecast_s = 0;                // the probe's own forecast
  double time_limit_s = 600;            // the job's bound
  std::vector<std::string> command() const;
  std::string command_line() const;  // shell-quoted
};
std::string probe_slurm_job(const ProbeJob& job);
std::string probe_k8s_job(const ProbeJob& job);

/// Gradient accumulation steps: global batch / (micro-batch x data-parallel degree).
int accumulation_steps(const EmitInputs& in);

/// One environment variable a launch needs, with what it means.
struct LaunchEnv {
  std::string name, value, comment;
};

/// One row per launcher format, holding everything about it both ways (src/launch/launchers.cpp):
/// how a plan is written for it and how its config is read back. Every switch on the format, the
/// --format parser and its help, the emit summary and --from's choice of reader read it. A new
/// launcher is its value in LauncherFormat, one row, and its writer and reader files in
/// src/launch/ (NAME.cpp, NAME_read.cpp).
struct LauncherRow {
  LauncherFormat format;
  const char* name;   // as --format spells it
  const char* title;  // as the launcher's project names itself, for help
  /// The frameworks it launches; the first is the one whose rules it checks (framework_of),
  /// and it is the default format of each it lists first (default_format).
  std::vector<Framework> frameworks;
  const char* usual_file;  // the config's name when it goes to stdout (the launch line names it)
  std::vector<PlanProblem> (*problems)(const EmitInputs& in);
  std::string (*text)(const EmitInputs& in);  // requires problems(in) to be empty
  /// One node's launch under Slurm's srun: `torchrun` is the rendezvous prefix ("torchrun
  /// --nnodes N ... --rdzv_endpoint ..."), `config` the config's path.
  std::string (*node_launch)(const EmitInputs& in, const std::string& torchrun,
                             const std::string& config);
  /// Environment the launch needs (DeepSpeed's timeout), which every scheduler's job sets: the
  /// Slurm script exports it, the TrainJob and the SkyPilot task list it; may be null.
  std::vector<LaunchEnv> (*env)(const EmitInputs& in);

  // Reading a config back (--from).
  const char* config_kind;  // what the file is, after the title: "config JSON"
  /// The file extensions that name the format, lower case; the first is the one to suggest.
  std::vector<const char*> extensions;
  /// Whether a file with no known extension is one of these, from its contents.
  bool (*recognises)(const std::string& text);
  LauncherConfig (*read)(const std::string& text, const std::string& path,
                         const ConfigInputs& inputs);
};
const std::vector<LauncherRow>& launcher_rows();
const LauncherRow& launcher_row(LauncherFormat f);
/// "deepspeed | megatron | ...": the rows' names joined by `separator`.
std::string launcher_names(const std::string& separator);
/// "DeepSpeed, Megatron-LM, ...": the rows' titles.
std::string launcher_titles();
/// The --format help: the names, and the default with the frameworks whose launcher is named
/// otherwise ("fsdp: accelerate").
std::string launcher_format_help();

}  // namespace shardplan
