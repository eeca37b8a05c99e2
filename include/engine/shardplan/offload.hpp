// Offload: optimizer states, weight shards and checkpointed activations kept in host memory or
// on NVMe between uses (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity, Rajbhandari et al. 2021;
// FSDP CPUOffload), and the saved activations of N layers sent to host memory without recompute
// (Megatron-Core's layer CPU offloading, as the GB200 / GB300 recipes run it over NVLink-C2C).
// Whether a framework allows it, the device memory it frees, the host memory it needs and the
// step time it adds (docs/offload.md).
#pragma once

#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {


/// What a framework can offload. The default is DeepSpeed's: offload_optimizer with ZeRO stage
/// 1-3 and offload_param with stage 3, each to cpu or nvme; activation checkpoints to the CPU
/// (activation_checkpointing.cpu_checkpointing) (deepspeed.ai/docs/config-json).
struct OffloadSupport {
  bool optimizer = true;
  bool params = true;
  bool activations = true;
  bool nvme = true;
  bool params_with_optimizer = false;  // only together (FSDP CPUOffload(offload_params=True))
  int optimizer_min_zero = 1;
  int params_min_zero = 3;
};

/// PyTorch FSDP's CPUOffload(offload_params=True) (and FSDP2's CPUOffloadPolicy): weights,
/// gradients and the optimizer step move to host memory together, under sharding (ZeRO 2/3 here);
/// no NVMe, no activation offload in the wrapper (torch.distributed.fsdp docs).
inline constexpr OffloadSupport kFsdpOffload{.optimizer = true,
                                             .params = true,
                                             .activations = false,
                                             .nvme = false,
                                             .params_with_optimizer = true,
                                             .optimizer_min_zero = 2,
                                             .params_min_zero = 2};

/// What a framework profile's capabilities.offload allow, as offload_problem reads it.
OffloadSupport offload_support(const FrameworkCaps& caps);

/// Why an offload cannot run, most basic first.
enum class OffloadProblem {
  none,
  no_host_facts,               // the cluster profile gives no host memory / PCIe bandwidth
  optimizer_not_supported,     // the framework cannot offload the optimizer
  params_not_supported,        // ... the weights
  activations_not_supported,   // ... the activation checkpoints
  nvme_not_supported,          // the framework offloads to host memory only
  activations_to_nvme,         // activation checkpoints go to host memory only
  parts_together,              // the framework offloads weights and optimizer only together
  optimizer_needs_zero,        // optimizer offload needs a ZeRO stage >= optimizer_min_zero
  params_need_zero,            // weight offload needs ZeRO >= params_min_zero (sharded params)
  activations_need_recompute,  // only full recompute's layer inputs are offloaded
};
const char* to_string(OffloadProblem p);

/// What the framework refuses of `offload` whatever the plan and cluster (what it offloads and
/// where): the part of offload_problem the search narrows its offload axis by.
OffloadProblem offload_kind_problem(const Offload& offload, const OffloadSupport& allowed);

/// The one place that decides whether `plan.offload` can run.
OffloadProblem offload_problem(const ParallelPlan& plan, const ClusterSpec& cluster,
                               const OffloadSupport& allowed = {});

/// Why Offload::activation_layers cannot run, most basic first. Megatron-Core's checks
/// (megatron/core/transformer/transformer_config.py, TransformerConfig.__post_init__): "CPU
/// offloading can be done only for layers less than num_layers", "no support for Pipeline
/// parallelism with CPU offloading", "CPU offloading does not work when activation recomputation
/// is enabled".
enum class ActivationLayersProblem {
  none,
  not_supported,       // the framework offloads no layers' activations (capabilities.offload)
  with_checkpoints,    // not together with the checkpointed-input offload (Offload::activations)
  to_nvme,             // host memory only
  with_pp,             // the framework's layer offload runs without pipeline parallelism only
  with_recompute,      // ... and without activation recompute
  too_many,            // N must be below the layers of the stage that holds the fewest
};
const char* to_string(ActivationLayersProblem p);

/// The one place that decides whether `plan.offload.activation_layers` can run; `fewest_layers`
/// is the fewest transformer layers a pipeline stage holds (the model's layers at pp 1).
ActivationLayersProblem activation_layers_problem(const ParallelPlan& plan, int fewest_layers,
                                                  const OffloadCaps& caps);

/// The fewest transformer layers a pipeline stage of `plan` holds; 0 for a model without layer
/// shapes (nothing to offload layer by layer).
int fewest_stage_layers(const ModelSpec& model, const ParallelPlan& plan);

/// Layer-micro-batches of the offloaded layers a stage keeps on the device all the same: the one
/// whose copy to the host is still running when the next layer's forward starts, and the one
/// fetched back ahead of its backward (Transformer Engine's cpu_offload, which Megatron-Core's
/// TransformerBlock wraps each layer in: get_cpu_offload_context, one layer of prefetch).
inline constexpr double kOffloadedLayersKeptOnDevice = 2.0;

/// The offloads the search tries, cheapest first: the optimizer (ZeRO-Offload), then with the
/// weights (ZeRO-Infinity / FSDP CPU offload), activation checkpoints, or both.
std::vector<Offload> offload_choices(OffloadTarget to = OffloadTarget::cpu);

/// GPUs of one node: they share its host memory, DRAM bandwidth and NVMe.
int gpus_on_node(const ClusterSpec& cluster);

/// Bytes per parameter DeepSpeed's CPU Adam moves over host DRAM per step: Step_AVX
/// (csrc/includes/cpu_adam.h) reads the fp32 weight, gradient, momentum and variance (16 B) and
/// writes weight, momentum and variance (12 B); the 16-bit weight copied back to the GPU is
/// written once more (2 B).
inline constexpr double kCpuAdamBytesPerParam = 30.0;
/// The fp32 gradient shard DeepSpeed keeps in host memory for CPU Adam (bytes per parameter).
inline constexpr double kHostGradientBytesPerParam = 4.0;

struct OffloadInputs {
  double shard_params = 0;               // parameters this device's optimizer updates
  double weight_bytes_per_param = 2;     // what moves up after the update and per fetch
  double gradient_bytes_per_param = 2;   // what moves down after backward
  double optimizer_bytes_per_param = 0;  // master + states (NVMe reads and writes them)
  int micro_batches = 1;
  double activation_bytes_per_micro_batch = 0;  // checkpointed inputs moved, one micro-batch
  double compute_s = 0;                         // forward + backward of the step
  int gpus_on_node = 1;
  // Offloaded layers (Offload::activation_layers): one layer's saved activations for one
  // micro-batch, and the forward and backward of one layer for one micro-batch its copies hide
  // behind.
  double layer_activation_bytes = 0;
  double layer_forward_s = 0;
  double layer_backward_s = 0;
};

/// Per step. Transfers during forward and backward (gradients down, weight fetches, activation
/// checkpoints) run on their own CUDA streams and hide behind compute up to compute_s (DeepSpeed's
/// overlap_comm and prefetching); the weights copied up after the CPU update, the CPU update and
/// NVMe reads and writes of the states are serial (DeepSpeed's default, no one-step delay).
struct OffloadTime {
  double gradients_down_s = 0;  // shard x gradient bytes / PCIe
  double weights_up_s = 0;      // shard x weight bytes / PCIe (optimizer offload, weights on GPU)
  double params_fetch_s = 0;    // 2 x micro-batches x shard x weight bytes / PCIe
  double activations_s = 0;     // 2 x micro-batches x checkpoint bytes / PCIe
  double hidden_s = 0;          // of the overlappable transfers, what compute hides
  // Offloaded layers: each layer's copy down runs beside the next layer's forward and its fetch
  // up beside the backward of the layer after it; per layer and micro-batch only what outlasts
  // that one layer's pass is exposed: max(0, bytes / d2h - forward) + max(0, bytes / h2d -
  // backward), times N layers and the micro-batches.
  int offloaded_layers = 0;     // N
  double layers_down_s = 0;     // micro-batches x N x layer bytes / d2h
  double layers_up_s = 0;       // micro-batches x N x layer bytes / h2d
  double layers_exposed_s = 0;  // of the two, what the layers' passes do not hide
  double cpu_adam_s = 0;        // node params x kCpuAdamBytesPerParam / CPU Adam's DRAM rate
  double nvme_s = 0;            // states read and written, weights read per pass, per node
  double exposed_s = 0;         // what the step grows by (layers_exposed_s included)
  // Which figures priced it: a probe's measurements (HostSpec::measured_*) or the datasheet's.
  bool link_measured = false;
  bool dram_measured = false;
};
OffloadTime offload_time(const Offload& offload, const HostSpec& host, const OffloadInputs& in);

}  // namespace shardplan
