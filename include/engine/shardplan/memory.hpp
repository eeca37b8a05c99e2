// Per-device memory for one plan: model states, activations and overheads, per pipeline stage.
// Every term is a named field; renderers add the labels and the assumptions they rest on.
#pragma once

#include <vector>

#include "shardplan/layer.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

class StageParamsMemo;  // model.hpp

/// Bytes per parameter of each model state for a precision and optimizer, before sharding.
/// Mixed-precision AdamW: 2 (bf16 weights) + 2 (bf16 grads) + 12 (fp32 master 4, momentum 4,
/// variance 4) = 16 (Rajbhandari et al. 2020, ZeRO, Sec. 3.1). Pure bf16 AdamW: 2 (weights) +
/// 2 (grads) + 4 (bf16 momentum 2, variance 2) = 8, no master copy.
struct StateBytes {
  double weights = 0;
  double weight_copies = 0;  // the recipe's extra low-precision copies (TE's fp8 weight cache)
  double gradients = 0;
  double optimizer = 0;
  double gather = 2;  // per weight element in a ZeRO / FSDP parameter all-gather
  double total() const { return weights + weight_copies + gradients + optimizer; }
};
StateBytes state_bytes_per_param(const ModelSpec& model, const TrainingSpec& training);

/// What a micro-batch saves for backward, per recompute policy (from the op list in layer.hpp).
struct ActivationProfile {
  double layer_saved[3] = {0, 0, 0};        // per layer, indexed by Recompute
  double dense_layer_saved[3] = {0, 0, 0};  // a MoE model's dense layers (else == layer_saved)
  double layer_working = 0;    // one layer's full saved set (rebuilt under full recompute)
  double embedding_saved = 0;  // first stage, per in-flight micro-batch
  double head_saved = 0;       // last stage: final norm, LM head input, fp32 softmax
  double mtp_saved = 0;        // last stage: an MTP module beside its layer (norms, 2h, head)
  double logits = 0;           // last stage: 16-bit logits before the fp32 loss
};
ActivationProfile activation_profile(const MicroBatchWork& work, const ModelSpec& model,
                                     const TrainingSpec& training, const ParallelPlan& plan);

// NCCL keeps send and receive buffers per channel and peer: NCCL_BUFFSIZE defaults to 4 MiB
// (NCCL environment-variable docs); 16 channels x 2 peers of a ring x 4 MiB = 128 MiB.
inline constexpr double kNcclBytesPerCommunicator = 16.0 * 2.0 * 4.0 * 1024.0 * 1024.0;

struct StageMemory {
  int stage = 0;
  double params = 0;  // parameters this device holds before ZeRO sharding
  // model states
  double weights_bytes = 0;
  double weight_copies_bytes = 0;  // the precision recipe's low-precision weight copies
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  // activations saved for backward, all in-flight micro-batches
  double activations_bytes = 0;
  double layer_activations_bytes = 0;  // the transformer layers' share (Korthikanti's formulas)
  double layers_in_flight = 0;         // layer-micro-batches whose activations are held at once
  // transient peaks
  double recompute_working_bytes = 0;  // full recompute: one layer's activations rebuilt
  double logits_bytes = 0;             // last stage
  double gathered_layers_bytes = 0;    // ZeRO-3: current + prefetched layer, unsharded
  double unsharded_grad_bytes = 0;     // ZeRO-3: a layer's gradient before its reduce-scatter
  bool params_kept_gathered = false;   // ZeRO-3 without reshard after forward: the whole stage
  // ZeRO-2/3 with the gradient sync deferred to the last micro-batch: the stage's unsharded
  // gradients, held across micro-batches
  double accumulated_grad_bytes = 0;
  // overheads
  double context_bytes = 0;  // CUDA context and workspaces (GPU profile)
  int nccl_communicators = 0;
  double nccl_bytes = 0;           // communicators x kNcclBytesPerCommunicator
  double ep_buffer_bytes = 0;      // DeepEP's NVLink + RDMA buffers (moe.hpp ep_buffer_bytes)
  double fragmentation_bytes = 0;  // share of activations and transients
  // offload (offload.hpp): off the device, not in total_bytes()
  double offloaded_bytes = 0;  // what the plan's offload took off this device
  double host_bytes = 0;       // this device's share of host memory
  double nvme_bytes = 0;       // this device's share of the node's NVMe

  double model_states_bytes() const {
    return weights_bytes + weight_copies_bytes + gradients_bytes + optimizer_bytes;
  }
  double transient_bytes() const {
    return recompute_working_bytes + logits_bytes + gathered_layers_bytes + unsharded_grad_bytes +
           accumulated_grad_bytes;
  }
  double overhead_bytes() const {
    return context_bytes + nccl_bytes + ep_buffer_bytes + fragmentation_bytes;
  }
  /// What the caching allocator reserves at the peak (torch.cuda.max_memory_reserved, what
  /// torchtitan logs as "memory"): tensors plus the fragmentation reserve.
  double total_bytes() const {
    return model_states_bytes() + activations_bytes + transient_bytes() + overhead_bytes();
  }
  /// What tensors and the context hold at the peak, without the allocator's reserve of free
  /// blocks (torch.cuda.max_memory_allocated plus the CUDA context and NCCL buffers, which the
  /// allocator does not see but nvidia-smi does).
  double allocated_bytes() const { return total_bytes() - fragmentation_bytes; }
};

/// Whether a ZeRO-2/3 plan holds its unsharded gradients across micro-batches: the training's
/// choice, or the framework's default (torch.distributed.pipelining's stage.py
/// backward_maybe_with_nosync calls set_requires_gradient_sync(last_backward) on an FSDP2
/// stage, so a plan with pipeline stages defers the reduce-scatter to the last micro-batch).
bool defers_grad_sync(const TrainingSpec& training, const ParallelPlan& plan);
/// Whether this step reduces its gradients once, after its last micro-batch: a plan that
/// defers its sync (defers_grad_sync) and runs more than one micro-batch a step.
bool syncs_grads_once(const TrainingSpec& training, const ParallelPlan& plan);
/// Whether ZeRO-3 keeps each unit's gathered parameters from its forward to its backward
/// (FSDP2 reshard_after_forward=False; torchtitan's "default" policy under pipeline stages).
bool keeps_params_gathered(const TrainingSpec& training, const ParallelPlan& plan);

/// How often ZeRO-3 gathers each unit's weights. Without kept-gathered weights: before every
/// forward and again before every backward. Kept gathered (keeps_params_gathered): not again for
/// the backward; and when the gradient sync is also deferred (torch.distributed.pipelining's
/// backward_maybe_with_nosync sets set_reshard_after_backward(False) beside
/// set_requires_gradient_sync(False) until the last backward), not again for later
/// micro-batches either: one gather per unit per step, before the first forward.
struct Zero3Gathers {
  bool backward = true;        // each backward gathers again
  bool once_per_step = false;  // only the step's first forward gathers
  /// Forward gathers per micro-batch, on average over a step of `micro_batches`.
  double forward_share(int micro_batches) const {
    return once_per_step && micro_batches > 1 ? 1.0 / micro_batches : 1.0;
  }
};
Zero3Gathers zero3_gathers(const TrainingSpec& training, const ParallelPlan& plan);

struct MemoryBreakdown {
  std::vector<StageMemory> stages;  // one per pipeline stage
  int worst_stage = 0;              // the most-loaded device
  bool activations_known = true;    // false when only the parameter count is known
  double capacity_bytes = 0;
  double headroom_bytes = 0;  // asked to stay free (ClusterSpec::headroom_bytes)
  bool fits = false;          // the peak within capacity less headroom, and the host's share
  StateBytes bytes_per_param;
  double fragmentation = 0;  // the share used for fragmentation_bytes
  double total_params = 0;
  double gathered_layer_bytes = 0;  // one layer's full weights in the weight dtype
  // Offload: the node's host memory against what its GPUs keep there (worst stage x GPUs).
  double host_bytes_per_node = 0;
  double host_capacity_bytes = 0;
  bool host_fits = true;

  const StageMemory& worst() const { return stages[worst_stage]; }
  double total_bytes() const { return worst().total_bytes(); }
  double margin_bytes() const { return capacity_bytes - total_bytes(); }
};

/// Everything estimate_memory needs that does not depend on the stage; the search builds it
/// once per (tp, cp, micro-batch, sequence parallel) and reuses it.
struct MemoryInputs {
  StateBytes per_param;
  ActivationProfile activations;
  bool activations_known = false;
};
MemoryInputs memory_inputs(const ModelSpec& model, const TrainingSpec& training,
                           const ParallelPlan& plan);

/// One pipeline stage's device.
StageMemory stage_memory(const ModelSpec& model, const TrainingSpec& training,
                         const ParallelPlan& plan, const ClusterSpec& cluster,
                         const MemoryInputs& inputs, int stage, StageParamsMemo* stages = nullptr);

/// Memory of every pipeline stage's device. The plan must be valid (see check_plan).
MemoryBreakdown estimate_memory(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelPlan& plan, const ClusterSpec& cluster);
/// The same from inputs already built (estimate() shares them with the step model).
MemoryBreakdown estimate_memory(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelPlan& plan, const ClusterSpec& cluster,
                                const MemoryInputs& inputs);

/// The most-loaded device's total. Activations fall and the embedding leaves after the first
/// stage, and only the last holds the LM head and logits, so the peak is on the first or last
/// stage, or the second when the first is given fewer layers, or, for a MoE model whose first
/// layers are dense, the first middle stage with the most MoE layers; this checks those (tests
/// compare it with estimate_memory on many plans).
double peak_memory_bytes(const ModelSpec& model, const TrainingSpec& training,
                         const ParallelPlan& plan, const ClusterSpec& cluster,
                         const MemoryInputs& inputs, StageParamsMemo* stages = nullptr);

/// Layer-micro-batches of activations a pipeline stage holds at its schedule's peak: the
/// micro-batches in flight (schedule.hpp) times the stage's layers. Interleaved 1F1B on stage 0
/// holds L (1 + (p-1)/(p v)) layers' worth, Korthikanti et al. 2022 Sec. 4.2.3.
double layers_in_flight(int layers, const ParallelPlan& plan, int micro_batches, int stage);

/// Moves what the plan offloads off the device into `host_bytes` / `nvme_bytes` and records it in
/// `offloaded_bytes`. The optimizer's host copy also needs the fp32 gradient shard CPU Adam reads.
/// Where the framework moves gradients with the optimizer (`caps.gradients_with_optimizer`) the
/// device keeps one reduce bucket of them (ZeRO-Offload: fp16 weights on the GPU, gradients and
/// optimizer states on the host; Ren et al. 2021, Sec. 4.1). Weights keep ZeRO-3's gathered
/// working set on the device; activations keep two layers' inputs (in use and being fetched).
/// Offloaded layers (Offload::activation_layers): of the stage's in-flight micro-batches, the
/// saved activations of N of its `stage_layers` layers go to host memory, less
/// kOffloadedLayersKeptOnDevice layer-micro-batches.
void offload_stage_memory(StageMemory& stage, const ParallelPlan& plan, const StateBytes& per,
                          const OffloadCaps& caps = {}, int stage_layers = 0);

}  // namespace shardplan
