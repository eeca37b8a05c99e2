// Long runs: checkpoint size and write time under a plan's sharding, interruptions at the
// cluster's scale, the Young/Daly checkpoint interval, goodput, and the operational settings
// (collective timeout, straggler flag, keep-last-K) that keep a days-long run alive.
#pragma once

#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

// Llama 3 405B (Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, Sec. 3.3.4):
// "During a 54-day snapshot period of pre-training, we experienced a total of 466 job
// interruptions ... 47 were planned ... The remaining 419 were unexpected", on up to 16K H100s
// (Sec. 3.3.1). Assuming all 16,384 GPUs for all 54 days: 419 / (54 x 24 x 16,384) =
// 1.97e-5 job-interrupting failures per GPU-hour (an upper bound on the GPU-hours, so a lower
// bound on the rate). BLOOM's "1-2 GPU failures a week" on 384 A100s is 1.6-3.1e-5.
inline constexpr double kLlama3Interruptions = 419;
inline constexpr double kLlama3Days = 54;
inline constexpr double kLlama3Gpus = 16384;
inline constexpr double kDefaultFailuresPerGpuHour =
    kLlama3Interruptions / (kLlama3Days * 24.0 * kLlama3Gpus);

// Restart cost beyond reading the checkpoint: detect, diagnose, reschedule, re-initialise.
// MegaScale (Jiang et al. 2024, NSDI): "The average time required for detecting failure
// and executing diagnostic tests is less than 10 minutes"; Daly (2006) works his examples with
// R = 10 min; Kokolis et al. (2024) assume 5-20 min.
inline constexpr double kDefaultRestartFixedS = 600;

// Checkpoint write bandwidth per node. BLOOM wrote 2.3 TB in ~40 s from 48 nodes to GPFS
// (bigscience tr11-176B-ml README and chronicles): 57.5 GB/s, 1.2 GB/s per node. Llama 3's
// Tectonic sustains 2 TB/s for 2,048 nodes (Sec. 3.3.1): 0.98 GB/s per node.
inline constexpr double kDefaultStorageBytesPerSPerNode = 1e9;

// Per rank, beyond weights and optimizer state: RNG states (PyTorch's CPU generator state is a
// 5,056-byte tensor, Python's and NumPy's MT19937 ~2.5 KB each, CUDA generators 16 B), the data
// loader's position, LR scheduler, step counter and the run's config. An allowance, rounded up
// to 1 MiB so it is visible; it is < 0.01% of any model the tool plans.
inline constexpr double kSmallStateBytesPerRank = 1024.0 * 1024.0;

/// Keep the last few checkpoints. Three lets a spike found one interval late still
/// roll back past it (PaLM restarted ~100 steps before a spike).
inline constexpr int kDefaultKeepLast = 3;

// PyTorch's ProcessGroupNCCL default timeout is 10 min (kProcessGroupNCCLDefaultTimeout,
// pytorch/pytorch#110947), as is Megatron-LM's --distributed-timeout-minutes. The recommended
// timeout never goes below it, and is kTimeoutHeadroom x the longest legitimate wait.
inline constexpr double kMinCollectiveTimeoutS = 600;
inline constexpr double kTimeoutHeadroom = 3;

// Straggler flag: a sustained drop in tokens/s below the run's median. 5% sits above the 1-2%
// diurnal throughput variation Llama 3 reports as normal (Sec. 3.3.4) and below the ~10% slower
// hosts MegaScale (Jiang et al. 2024) removed as stragglers. "Sustained": the median over the steps
// of the last kStragglerWindowS (at least kStragglerMinSteps steps), so one slow step (a
// checkpoint, an eval) does not trip it.
inline constexpr double kStragglerDrop = 0.05;
inline constexpr double kStragglerWindowS = 600;
inline constexpr int kStragglerMinSteps = 10;

struct RunbookOptions {
  double storage_bytes_per_s = kDefaultStorageBytesPerSPerNode;
  bool storage_aggregate = false;  // storage_bytes_per_s is the whole cluster's, not a node's
  int keep_last = kDefaultKeepLast;
  double disk_bytes = 0;  // 0 = not given
  double failures_per_gpu_hour = kDefaultFailuresPerGpuHour;
  double restart_s = 0;              // whole restart; 0 = kDefaultRestartFixedS + checkpoint read
  double checkpoint_interval_s = 0;  // 0 = Young's interval
};

/// What one checkpoint holds and how long it takes to write and read back.
///
/// Convention: state replicated across data-parallel ranks (weights below ZeRO-3, optimizer
/// state at ZeRO-0) is written once per model-parallel rank, by data-parallel rank 0 (DeepSpeed's
/// mp_rank_XX_model_states.pt); sharded state (optimizer at ZeRO >= 1, weights at ZeRO-3) is
/// written by every data-parallel rank, its 1/dp share. On restart every rank reads what it
/// holds. Gradients are not saved (Megatron-LM checkpointing.py has no gradient key).
struct CheckpointPlan {
  double weight_bytes_per_param = 0;     // the model's parameter dtype: 2 (bf16/fp16/fp8), 4 (fp32)
  double optimizer_bytes_per_param = 0;  // fp32 master + optimizer moments (StateBytes::optimizer)
  double bytes_per_param() const { return weight_bytes_per_param + optimizer_bytes_per_param; }
  double params = 0;
  double small_state_bytes = 0;    // kSmallStateBytesPerRank x every rank
  double total_bytes = 0;          // the whole model state once + small state
  double bytes_per_rank = 0;       // the heaviest writer: data-parallel rank 0 of its stage
  int writing_ranks = 0;           // ranks that write weights or optimizer state
  double node_write_bytes = 0;     // the busiest node's writes (its ranks in Megatron's order)
  double read_bytes_per_rank = 0;  // the heaviest reader on restart
  double read_total_bytes = 0;     // every rank's reads (replicas read the same files)
  double node_read_bytes = 0;
  // storage
  double node_bytes_per_s = 0;
  double aggregate_bytes_per_s = 0;
  double write_s = 0;  // max(busiest node / node bandwidth, total / aggregate)
  bool write_aggregate_bound = false;
  double read_s = 0;  // likewise for what every rank reads back
  // interval
  double young_interval_s = 0;  // sqrt(2 x write_s x mtbf_s), Young 1974
  double daly_interval_s = 0;   // Daly 2006's higher-order estimate, for comparison
  double interval_s = 0;        // the chosen interval (given, or Young's)
  bool interval_given = false;
  int interval_steps = 0;           // max(1, round(interval_s / step_s))
  double effective_interval_s = 0;  // interval_steps x step_s: checkpoints fall between steps
  // retention
  int keep_last = 0;
  double disk_bytes = 0;           // (keep_last + 1) x total_bytes: the next one is written before
                                   // the oldest is deleted (torchtitan keeps >= 2 for that reason)
  double disk_capacity_bytes = 0;  // 0 = not given
  bool disk_fits = true;
  long long covered_steps = 0;  // keep_last x interval_steps: how far back a rollback can go
};

struct FailureModel {
  double per_gpu_hour = 0;
  double per_day = 0;    // job interruptions per day: per_gpu_hour x gpus x 24 (independent
                         // failures of a series system; Kokolis et al. 2024 use the same model)
  double mtbf_s = 0;     // 3600 / (per_gpu_hour x gpus)
  double restart_s = 0;  // detect + reschedule + re-initialise + read the checkpoint
  bool restart_given = false;
};

struct Runbook {
  CheckpointPlan checkpoint;
  FailureModel failures;
  double step_s = 0;
  double tokens_per_s = 0;
  // goodput = 1 / (1 + C/T + (T/2 + R)/M): see goodput()
  double goodput = 0;
  double checkpoint_overhead = 0;  // C / T
  double failure_overhead = 0;     // (T/2 + R) / M
  // time to train the --tokens budget with failures counted (0 when no budget is given)
  double tokens = 0;
  double compute_s = 0;          // steps x step_s, failure-free
  double wall_s = 0;             // compute_s / goodput
  double expected_failures = 0;  // wall_s / mtbf_s
  // operations
  double longest_wait_s = 0;        // max(step, checkpoint write, checkpoint read)
  double collective_timeout_s = 0;  // max(kMinCollectiveTimeoutS, 3 x longest wait), whole minutes
  double straggler_drop = kStragglerDrop;
  int straggler_window_steps = 0;
  bool first_order_valid = true;  // false when T/2 + R approaches the MTBF (goodput < 50%)
};

/// Young (1974), "A first order approximation to the optimum checkpoint interval", CACM 17(9):
/// sqrt(2 C M) for checkpoint cost C and mean time between failures M.
double young_interval_s(double checkpoint_s, double mtbf_s);

/// Daly (2006), FGCS 22(3):303-312: sqrt(2CM) [1 + sqrt(C/2M)/3 + (C/2M)/9] - C for
/// C < 2M, else M. Reproduces the paper's captions (C = 5 min: M = 24 h -> 117 min).
double daly_interval_s(double checkpoint_s, double mtbf_s);

/// Share of wall time that makes progress, first order in T/M (Young 1974, Daly 2006). A cycle
/// of T seconds of work costs T + C; failures arrive every M seconds of wall time on average and
/// each loses the work since the last checkpoint, T/2 on average, plus the restart R. Per second
/// of work: 1 + C/T + (T/2 + R)/M. Minimising C/T + T/(2M) over T gives Young's sqrt(2CM).
double goodput(double interval_s, double checkpoint_s, double mtbf_s, double restart_s);

/// The runbook of one plan. `estimate` is estimate() of the same specs.
Runbook plan_runbook(const ModelSpec& model, const TrainingSpec& training, const ParallelPlan& plan,
                     const ClusterSpec& cluster, const Estimate& estimate,
                     const RunbookOptions& options);

}  // namespace shardplan
