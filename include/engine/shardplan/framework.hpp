// The training stack that runs a plan (Megatron-Core, DeepSpeed, torchtitan, PyTorch FSDP): what
// it can run at all (its capabilities, which extend the plan rules) and how it runs it (kernels,
// collectives, overlap), as loaded from profiles/frameworks/*.json.
#pragma once

#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/accuracy.hpp"
#include "shardplan/schedule_id.hpp"

namespace shardplan {

enum class Framework { megatron, deepspeed, torchtitan, fsdp };

/// One row per framework. What it can run and how fast lives in its profile,
/// profiles/frameworks/NAME.json (read by input's load_framework); its launcher in the launcher
/// table (src/launch/launchers.cpp), which lists the frameworks each format serves. A new
/// framework is its value in `Framework`, one row here and its profile.
struct FrameworkRow {
  Framework id;
  const char* name;  // as --framework, the profile's "name" and its file name spell it
};
inline constexpr FrameworkRow kFrameworkRows[] = {{Framework::megatron, "megatron"},
                                                  {Framework::deepspeed, "deepspeed"},
                                                  {Framework::torchtitan, "torchtitan"},
                                                  {Framework::fsdp, "fsdp"}};
inline constexpr int kFrameworks = static_cast<int>(std::size(kFrameworkRows));
const char* to_string(Framework f);
/// InputError naming `field` with the valid names.
Framework parse_framework(const std::string& text, const std::string& field);
/// "megatron | deepspeed | ...": the rows' names joined by `separator`.
std::string framework_names(const std::string& separator);

/// How tokens reach the experts of other ranks. alltoall: one copy per (token, expert) pair
/// (Megatron-Core's --moe-token-dispatcher-type alltoall). deepep: one copy per token and
/// destination scale-up domain over the scale-out network, forwarded inside the domain over
/// NVLink (DeepEP's internode kernels, DeepSeek-V3 report Sec. 3.2.2; Megatron-Core's flex
/// dispatcher with --moe-enable-deepep).
enum class MoeDispatcher { alltoall, deepep };

/// Which of a step's kernels run captured in CUDA graphs, replayed without a host launch each
/// (Megatron-Core's cuda_graph_impl and cuda_graph_scope). none: every kernel launched from the
/// host. scoped: some modules of each layer (Transformer Engine's per-module graphs,
/// cuda_graph_impl "transformer_engine" with a scope such as attn, moe_router, moe_preprocess).
/// full: whole layers or the whole iteration ("local" graphs of full layers, or scope
/// full_iteration).
enum class CudaGraphs { none, scoped, full };

/// How context parallelism splits attention over its ranks. ring: each rank keeps its sequence
/// chunk and passes K and V around the ring, hidden behind the attention it feeds (Megatron-Core
/// cp_comm_type p2p; torchtitan; Liu et al. 2023, Ring Attention). ulysses: all-to-alls trade
/// the sequence split for a head split before attention and back after it, on the critical
/// path (DeepSpeed-Ulysses, Jacobs et al. 2023, arXiv:2309.14509; Megatron-Core cp_comm_type a2a).
enum class ContextParallel { ring, ulysses };

enum class OffloadTarget { cpu, nvme };

/// Where a framework can move each kind of state off the GPU (empty: nowhere).
struct OffloadCaps {
  std::vector<OffloadTarget> optimizer = {OffloadTarget::cpu, OffloadTarget::nvme};
  std::vector<OffloadTarget> params = {OffloadTarget::cpu, OffloadTarget::nvme};
  std::vector<OffloadTarget> activations = {OffloadTarget::cpu};
  bool params_with_optimizer = false;  // weights only together with the optimizer (FSDP)
  int optimizer_min_zero = 1;          // the lowest ZeRO stage optimizer offload runs under
  int params_min_zero = 3;             // the lowest ZeRO stage weight offload runs under
  /// The fewest ranks the weights are sharded over (the FSDP degree: dp at ZeRO 2-3, else 1) for
  /// offload to apply at all: torchtitan passes enable_cpu_offload to apply_fsdp, which runs only
  /// when data_parallel_shard_degree > 1 (2). 1: any plan.
  int min_shard_ranks = 1;
  /// Optimizer offload also moves the 16-bit gradients off the device as backward produces
  /// them (DeepSpeed ZeRO-Offload, FSDP CPUOffload); false: they stay (Megatron-Core's CPU
  /// optimizer copies them from the GPU's gradient buffer, which stays).
  bool gradients_with_optimizer = false;
  /// What the device keeps of them meanwhile: one reduce bucket of this many elements (DeepSpeed
  /// reduce_bucket_size); 0: nothing beyond the transient gradients memory.cpp already counts.
  double gradient_bucket_elements = 0;
  /// Offloads the saved activations of N layers without recompute (Offload::activation_layers;
  /// Megatron-Core's TE cpu-offloading of layers), and whether it combines with pipeline
  /// parallelism and with activation recompute (Megatron-Core refuses both).
  bool activation_layers = true;
  bool activation_layers_with_pp = true;
  bool activation_layers_with_recompute = true;
};

/// What a framework can run. A default-constructed value allows everything: the ideal stack the
/// engine prices when no framework is named (engine tests, the probe).
struct FrameworkCaps {
  std::vector<int> zero_stages = {0, 1, 2, 3};
  int max_zero_with_pp = 3;  // the highest ZeRO stage its pipeline engine combines with
  bool tensor_parallel = true;
  bool sequence_parallel = true;
  /// The stack has no switch for it: sequence parallelism runs whenever tensor parallelism
  /// does (torchtitan's apply_tp shards the norms and residual stream as SequenceParallel).
  bool sequence_parallel_always = false;
  std::vector<Schedule> pipeline_schedules = all_schedules();
  /// First and last stage layer counts: any (Megatron-Core), lighter than the others only
  /// (torchtitan), or none (an even split; DeepSpeed partitions by its own method).
  enum class StageLayout { any, lighter, none };
  StageLayout stage_layout = StageLayout::any;
  /// Schedules it runs only with 2 or more virtual stages per device (torchtitan's zb-h1 is
  /// ScheduleInterleavedZeroBubble).
  std::vector<Schedule> interleaved_only_schedules;
  bool context_parallel = true;  // ring attention (ContextParallel::ring)
  bool ulysses = false;          // all-to-all head splitting (ContextParallel::ulysses)
  bool expert_parallel = true;
  /// The model families it shards experts for, as (Hugging Face model_type, the stack's own
  /// name for it); empty: any model. DeepSpeed's AutoEP knows a list of presets.
  std::vector<std::pair<std::string, std::string>> expert_parallel_models;
  int expert_parallel_max_zero = 3;     // the highest ZeRO stage it combines with ep > 1
  bool expert_parallel_with_tp = true;  // ep > 1 beside tp > 1
  bool fp8 = true;
  bool fp16 = true;
  bool bf16_pure = true;  // trains with bf16 weights, gradients and states, no fp32 master
  bool tp_across_nodes = true;
  // Mixture of experts: EP all-to-alls hidden behind paired forward and backward passes
  // (Megatron-Core's --overlap-moe-expert-parallel-comm), and the dispatchers it runs.
  bool moe_a2a_overlap = true;
  // The schedules it runs the overlap on; empty: any.
  std::vector<Schedule> moe_a2a_overlap_schedules;
  std::vector<MoeDispatcher> moe_dispatchers = {MoeDispatcher::alltoall, MoeDispatcher::deepep};
  bool replicate_only_1d = false;  // plain data parallel (ZeRO-0) refuses any other parallelism
  /// Recomputes Megatron-Core's modules by name (ParallelPlan::recompute_modules).
  bool recompute_modules = true;
  /// The ZeRO stages it runs as hybrid sharding (ParallelPlan::dp_shard: shard inside a group of
  /// data-parallel ranks, replicate across groups); empty: none.
  std::vector<int> hsdp_zero_stages = {1, 2, 3};
  OffloadCaps offload;

  bool has_schedule(Schedule s) const;
  bool has_zero(int stage) const;
  bool has_dispatcher(MoeDispatcher d) const;
  bool has_context_parallel(ContextParallel kind) const;
  bool has_hsdp(int stage) const;
  /// Whether it shards the experts of a model of this family (Hugging Face model_type): not at
  /// all without expert_parallel, and only the listed families where it lists some. The stack's
  /// name for the family ("" when any model goes) in `preset`.
  bool shards_experts_of(const std::string& model_type, std::string* preset = nullptr) const;
};

/// Achieved share of the link's bus bandwidth for a collective group of `ranks` GPUs,
/// interpolated in log(ranks); empty = 1 (the link's busbw as nccl-tests measures it).
struct BusbwShare {
  std::vector<std::pair<double, double>> points;  // (ranks, share), ascending ranks
  /// The share of a group inside one node, where it differs from the points (fitted on groups
  /// that span nodes); 0 = the points.
  double within_node = 0;
  double at(double ranks) const;
  /// The share of a group of `ranks` placed over `domains` scale-up domains (a Placement's
  /// domains()): within_node when it sits in one, else by its rank count.
  double at(double ranks, int domains) const;
};

/// How a framework runs a plan, relative to the stack the GPU profiles were fitted on
/// (Megatron-LM with fused kernels: every factor 1).
struct FrameworkPricing {
  double kernel_speed = 1;  // compute time is divided by this (eager < 1 < compiled gains)
  /// Per GPU generation ("A100", "H100"), fitted on that generation's fitted validation cases;
  /// a generation not listed takes kernel_speed.
  std::vector<std::pair<std::string, double>> kernel_speed_by_gpu;
  /// Compute time is also divided by this when the plan has pipeline stages: what the
  /// framework's pipeline engine loses against Megatron-LM's (DeepSpeed's PipelineEngine
  /// issues its instructions from Python and does not overlap its sends); 1 = no loss.
  double pipeline_engine_speed = 1;
  /// Fixed time each transformer layer costs per micro-batch, forward and backward together,
  /// beside its kernels' own time (profile kernels.layer_fixed_us): launch gaps, host work
  /// between kernels, stream waits. It is what makes small layers and small micro-batches slow.
  double layer_fixed_s = 0;
  /// The same for each mixture-of-experts layer on top (kernels.moe_layer_fixed_us): the router's
  /// top-k, the permute and unpermute, and the device-to-host sync of the token counts a
  /// dropless dispatcher waits on.
  double moe_layer_fixed_s = 0;
  /// The share of those fixed costs left when the step runs under CUDA graphs (profile
  /// kernels.cuda_graph_fixed_share, scoped and full; fitted by `validate --write-fit`): a graph
  /// replays its kernels without the host launching each. 0 = the stack runs no CUDA graphs
  /// (TrainingSpec::cuda_graphs other than none is refused).
  double cuda_graph_scoped_fixed_share = 0;
  double cuda_graph_full_fixed_share = 0;
  /// The share of the fixed costs a step pays under `graphs` (1 without graphs).
  double fixed_share(CudaGraphs graphs) const {
    return graphs == CudaGraphs::scoped ? cuda_graph_scoped_fixed_share
           : graphs == CudaGraphs::full ? cuda_graph_full_fixed_share
                                        : 1.0;
  }
  /// The fixed costs of `layers` transformer layers, `moe_layers` of them mixtures of experts,
  /// for one micro-batch's forward and backward under `graphs`.
  double fixed_cost_s(double layers, double moe_layers, CudaGraphs graphs) const {
    return (layers * layer_fixed_s + moe_layers * moe_layer_fixed_s) * fixed_share(graphs);
  }
  /// The share a 16-bit grouped GEMM (a MoE layer's routed experts) reaches of a dense GEMM of
  /// one expert's size (profile kernels.grouped_gemm_16bit_share; 1 = as fast), fitted by
  /// `validate --write-fit`. Transformer Engine's GroupedLinear runs one cuBLAS GEMM per expert
  /// over several streams (TransformerEngine PR #853), and its 16-bit path slows on the uneven
  /// per-expert token counts a router hands it (TransformerEngine issue #2151).
  double grouped_gemm_16bit_share = 1;
  /// Bytes per logit element at the loss's peak (profile loss.peak_bytes_per_logit); 0 = the
  /// activation dtype's, the 16-bit logits of Megatron's fused vocab-parallel loss.
  double logit_bytes = 0;
  /// The same under tensor parallelism, where the loss runs on vocabulary-sharded logits
  /// (profile loss.peak_bytes_per_logit_vocab_parallel; 0 = logit_bytes).
  double logit_bytes_vocab_parallel = 0;
  /// The same for a loss compiled with torch.compile (profile
  /// loss.compiled_peak_bytes_per_logit; 0 = the stack cannot compile its loss, and
  /// TrainingSpec::compiled_loss is refused). Not under TP's vocabulary-parallel loss.
  double compiled_logit_bytes = 0;
  /// What selective recompute keeps per layer: Megatron's (all but the attention core), or
  /// torchtitan's op policy (every other matmul's output, the attention output, the input).
  enum class Selective { attention_core, every_other_matmul };
  Selective selective = Selective::attention_core;
  BusbwShare dp_busbw;     // gradient reduce and ZeRO-1/2 parameter gathers
  BusbwShare zero3_busbw;  // ZeRO-3 / FSDP per-unit gathers and reduce-scatters
  BusbwShare tp_busbw;
  bool tp_comm_overlap = false;     // overlaps TP comm with GEMMs by default
  bool overlap_grad_reduce = true;  // reduces ZeRO-0/1/2 gradients under backward by default
  /// Whether a pipeline send holds its sender until it completes (profile overlap.pp_send:
  /// "async", "blocking", or "steady-state-gradients-async": an interleaved schedule's steady
  /// state runs its gradient sends beside compute; its activation sends, its warm-up and
  /// cool-down and the other schedules block).
  enum class PipelineSend { async, blocking, steady_gradients_async };
  PipelineSend pp_send = PipelineSend::async;
  /// ZeRO-3 / FSDP under gradient accumulation (profile memory.fsdp_*). Whether a unit's
  /// gathered parameters are freed after its forward (FSDP2 reshard_after_forward) always, or
  /// kept until its backward when the plan has pipeline stages (torchtitan's "default" policy).
  enum class Reshard { always, not_with_pp };
  Reshard fsdp_reshard = Reshard::always;
  /// Whether gradients are reduce-scattered every micro-batch, or held unsharded across the
  /// micro-batches when the plan has pipeline stages (torch.distributed.pipelining's
  /// set_requires_gradient_sync(last_backward)).
  bool fsdp_defer_grad_sync_with_pp = false;
  /// Where a mixture of experts weights each expert's output by its router probability: in the
  /// combine after the experts (which then keeps every expert output for the probabilities'
  /// gradient), or inside the experts' activation (Megatron-Core's weighted SwiGLU: the combine
  /// keeps nothing but indices). Profile memory.moe_router_probs.
  bool moe_probs_in_activation = false;
  /// Bytes per element of the unsharded gradients held across micro-batches (FSDP2 accumulates
  /// them in MixedPrecisionPolicy.reduce_dtype); 0 = the recipe's gradient bytes.
  double fsdp_accumulated_grad_bytes = 0;
  /// Whether a low-precision linear saves its quantized input for the weight gradient
  /// (Transformer Engine's Linear / LayerNormLinear / GroupedLinear: the recipe's
  /// saved_input_bytes) or the 16-bit input it was given (torchao's Float8Linear and MXLinear
  /// save input_hp and cast again in backward). Profile memory.low_precision_saved_inputs.
  bool saves_quantized_inputs = false;

  /// The speed compute is divided by on `gpu` (its accuracy class) for a plan of `pp` stages.
  double compute_speed(const std::string& gpu_class, int pp) const;
};

/// A framework profile: its name, capabilities, pricing and what validation says of it.
struct FrameworkProfile {
  std::string name;  // empty: no framework named (every capability, neutral pricing)
  Framework id = Framework::megatron;
  std::string source;  // the profile file
  FrameworkCaps caps;
  FrameworkPricing pricing;
  // The recipe `--precision fp8` means under this framework (a precision name, as
  // profiles/precisions/ spells it); empty: fp8-delayed.
  std::string fp8_default_recipe;
  double max_published_mfu = 0;  // highest MFU published for it at scale; 0 = unknown
  std::string max_published_mfu_source;
  /// Per GPU generation (profile max_published_mfu_by_gpu); a generation not listed takes
  /// max_published_mfu.
  std::vector<PublishedMfu> max_published_mfu_by_gpu;
  std::vector<AccuracyClass> accuracy;
  /// The interval of a plan on a GPU generation no validation case of this framework has
  /// (cases == 0: none in the profile).
  AccuracyClass beyond_corpus;

  /// The highest published MFU that a plan on `gpu` (its accuracy class) is checked against.
  PublishedMfu published_mfu_for(const std::string& gpu_class) const;

  /// The accuracy class of a GPU (GpuSpec::accuracy_class) and model kind; the GPU's class of
  /// the other kind when only that one has cases (its reach then says the plan lies outside);
  /// beyond_corpus when validation has no case on the GPU, nullptr when the profile has neither.
  const AccuracyClass* accuracy_for(const std::string& gpu_class, bool moe) const;
};

}  // namespace shardplan
