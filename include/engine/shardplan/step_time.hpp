// Step time of one plan: compute from the op list (GEMM efficiency curve, memory-bound kernels),
// recompute, the pipeline bubble, exposed communication and the optimizer step; then tokens/s,
// model and hardware FLOP/s, MFU and HFU (Narayanan et al. 2021; Korthikanti et al. 2022).
#pragma once

#include "shardplan/comm.hpp"
#include "shardplan/compute.hpp"
#include "shardplan/layer.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/offload.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/simulate.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_parts.hpp"

namespace shardplan {

/// Everything a micro-batch costs one device that does not depend on dp, pp, ZeRO,
/// interleaving or recompute. The search computes it once per (tp, cp, sp, micro-batch).
struct MicroBatchCost {
  double tokens = 0;  // per micro-batch on this device
  BlockTime layer, embedding, head;
  BlockTime dense_layer;  // a MoE model's dense layers (== layer when all layers are alike)
  BlockTime mtp;          // one MTP module beside its layer (layer.hpp MicroBatchWork::mtp)
  ActivationProfile activations;
  LayerCollectives collectives;  // sizes (and the CP / EP times) per layer and micro-batch
  // tensor parallel, per layer per micro-batch
  double tp_forward_s = 0;    // Megatron's two all-reduces (AG + RS pairs with SP)
  double tp_backward_s = 0;   // their conjugates, plus SP's re-gather of saved inputs
  int tp_forward_calls = 0;
  int tp_backward_calls = 0;
  double tp_edges_s = 0;  // embedding (first stage) and LM head with any MTP (last), fwd + bwd
  double tp_loss_gather_s = 0;  // a full-vocabulary loss's logits all-gather (LM head's stage)
  double attention_s = 0;  // what the K/V ring hides behind
  ExpertTraffic ep;        // one MoE layer's dispatch and combine, forward
  double forward_model_flops = 0;  // one forward pass over the global batch (model FLOPs)
};
/// The memory model's inputs from the same micro-batch description, so it is built once.
MemoryInputs memory_inputs(const ModelSpec& model, const TrainingSpec& training,
                           const MicroBatchCost& cost);

MicroBatchCost micro_batch_cost(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelPlan& plan, const ClusterSpec& cluster);

struct Throughput {
  double tokens_per_s = 0;
  double model_flops = 0;     // per step: 3 x forward, attention over the full s^2 (Eq. 7)
  double hardware_flops = 0;  // model FLOPs plus recomputed forward FLOPs
  double tflops_per_gpu = 0;  // model FLOP/s per GPU, in TFLOP/s
  double mfu = 0;
  double hfu = 0;
  double peak_flops = 0;  // per GPU, of the training dtype
};

/// Whether a plan's MFU is believable: the one check every command prints (consistency.hpp).
struct MfuPlausibility {
  double mfu = 0;
  std::string framework;   // the profile's name; empty: none named
  PublishedMfu published;  // the bound checked against (mfu 0: none published)
  bool above_published = false;
  /// No published bound, and above kRedFlagMfu on more than one node's worth of GPUs.
  bool red_flag_at_scale = false;
  bool warns() const { return above_published || red_flag_at_scale; }
};

/// Above this MFU at scale a plan is suspect whatever the framework: published dense runs
/// reach 40-56% (Llama 3 405B 38-43%, Dubey et al. 2024 Table 4; Korthikanti et al. 2022
/// Table 5: 56.3%).
inline constexpr double kRedFlagMfu = 0.60;

/// One plan, end to end.
struct Estimate {
  MemoryBreakdown memory;
  CommBreakdown comm;
  StepTime time;  // the closed forms: the search's fast bound
  /// The plan's step: the simulated one (`simulated`) where the step was simulated, the closed
  /// form's otherwise. Throughput, MFU and time and cost to train are taken from it.
  double step_s = 0;
  bool step_simulated = false;
  Throughput throughput;
  double train_s = 0;     // time to train --tokens (0 when not asked)
  double train_cost = 0;  // GPU-hours x --gpu-hour-cost
  double train_gpu_hours = 0;
  bool params_only = false;  // compute from 6 N tokens at an assumed MFU (no architecture)
  /// The step simulated event by event (step_simulation.hpp).
  SimulatedStep simulated;
  MfuPlausibility mfu_check;  // against the framework x GPU generation's highest published
  PlanScope scope;            // what the step interval's validation reach is checked against
};

/// Assumed MFU when only the parameter count is known: the low end of the 40-56% that dense
/// LLM training reaches at scale (Llama 3 405B: 38-43%, Dubey et al. 2024 Table 4).
inline constexpr double kParamsOnlyMfu = 0.40;

/// The MFU check of a plan of `training`'s framework on `cluster`'s GPUs.
MfuPlausibility mfu_plausibility(double mfu, const TrainingSpec& training,
                                 const ClusterSpec& cluster);

/// Whether estimate() also simulates the step event by event (Estimate::simulated): `run` keeps
/// the event list (the trace), `figures` only the step and its parts (validation), `skip` reads
/// the closed forms alone (the step is then the closed form's).
enum class Simulation { run, figures, skip };

Estimate estimate(const ModelSpec& model, const TrainingSpec& training, const ParallelPlan& plan,
                  const ClusterSpec& cluster, Simulation simulation = Simulation::run);

/// The step model without per-stage memory detail, from a precomputed micro-batch cost: what
/// the search evaluates millions of times. estimate() is built on it.
struct Evaluation {
  StepTime time;
  CommBreakdown comm;
  double peak_bytes = 0;
  bool host_fits = true;  // offload: the node's host memory holds what its GPUs keep there
  double model_flops = 0;
  double hardware_flops = 0;
};
/// `stage_params`: the search's memo of its pipeline's per-stage parameters (model.hpp), or none.
Evaluation evaluate(const ModelSpec& model, const TrainingSpec& training, const ParallelPlan& plan,
                    const ClusterSpec& cluster, const MicroBatchCost& cost,
                    const MemoryInputs& memory, StageParamsMemo* stage_params = nullptr);

/// evaluate()'s two halves. The memory half alone decides whether a plan fits, so the search
/// asks it first and prices the step only of the plans that fit (and of the few that do not
/// whose step breaks a tie: search.cpp). evaluate() is evaluate_time() with the memory half's
/// figures filled in.
struct MemoryFit {
  double peak_bytes = 0;  // the worst stage's peak; 0 when the model's activations are unknown
  bool host_fits = true;  // offload: the node's host memory holds what its GPUs keep there
};
MemoryFit evaluate_memory(const ModelSpec& model, const TrainingSpec& training,
                          const ParallelPlan& plan, const ClusterSpec& cluster,
                          const MemoryInputs& memory, StageParamsMemo* stage_params = nullptr);
/// The step, its communication and its FLOPs, Evaluation::peak_bytes and host_fits left unset.
Evaluation evaluate_time(const ModelSpec& model, const TrainingSpec& training,
                         const ParallelPlan& plan, const ClusterSpec& cluster,
                         const MicroBatchCost& cost, const MemoryInputs& memory,
                         StageParamsMemo* stage_params = nullptr);
/// The same from the plan alone: its micro-batch cost and memory inputs built here (what pricing
/// one plan outside the search's loop needs: the ladder's rungs, the re-rank's simulations).
Evaluation evaluate_time(const ModelSpec& model, const TrainingSpec& training,
                         const ParallelPlan& plan, const ClusterSpec& cluster);

}  // namespace shardplan
