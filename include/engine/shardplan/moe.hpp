#pragma once
// Mixture-of-experts execution: what the expert-parallel all-to-alls move and how long they
// take with the dispatcher, the dispatch dtype and node-limited routing the run uses, and what
// of them an overlapped schedule hides.

#include <vector>

#include "shardplan/collectives.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// One MoE layer's dispatch and combine on one GPU, one forward pass (backward runs both again,
/// combine's gradient as a dispatch and dispatch's as a combine).
struct ExpertTraffic {
  double dispatch_bytes = 0;  // per GPU, as nccl-tests would size the all-to-all
  double combine_bytes = 0;
  double dispatch_s = 0;
  double combine_s = 0;
  /// Expert TP > 1: the all-gather of the received tokens over the expert-TP group after the
  /// dispatch and the reduce-scatter before the combine (Megatron-Core token_dispatcher.py).
  double expert_tp_s = 0;
  /// Copies of a token that cross the scale-out network (deepep: distinct remote domains;
  /// alltoall: its remote (token, expert) pairs); 0 when the group stays in one domain.
  double remote_copies_per_token = 0;
  int domain_limit = 0;  // node-limited routing: domains a token may reach; 0 = no limit
  double layer_s() const { return dispatch_s + combine_s + expert_tp_s; }
};

/// Bytes of one dispatched element: fp8 with one fp32 scale per 128 (DeepSeek-V3 report,
/// Sec. 3.3.2: 1x128 tiles) when the training dispatches in fp8, else the activation's.
double dispatch_element_bytes(const TrainingSpec& training);

/// `visits` token-visits (tokens x top-k, times capacity or max-load) of `tokens` tokens leave
/// this GPU per MoE layer, each `hidden` wide.
ExpertTraffic expert_traffic(const ModelSpec& model, const TrainingSpec& training,
                             const Placement& expert_group, const ClusterSpec& cluster,
                             double tokens, double visits);

/// The two buffers DeepEP's normal (high-throughput) kernels allocate per rank: NVLink (IPC)
/// memory for the intranode forwarding and, when the group spans more than one 8-GPU NVLink
/// group, NVSHMEM (RDMA) memory for the internode hop.
struct DeepEpBuffers {
  double nvl_bytes = 0;
  double rdma_bytes = 0;
  double total() const { return nvl_bytes + rdma_bytes; }
};

/// The EP group sizes DeepEP has dispatch and combine configs for (its Buffer asserts on the
/// others), ascending.
const std::vector<int>& deepep_group_sizes();
bool deepep_runs_group(int ranks);

/// SMs Megatron-Core gives DeepEP's kernels when --moe-flex-dispatcher-num-sms is not set.
inline constexpr int kDeepEpDefaultSms = 20;

/// DeepEP's buffers for a group of `ranks` (one of deepep_group_sizes()), tokens `hidden_bytes`
/// wide, its kernels on `num_sms` SMs: Megatron-Core's get_buffer sizes them as the larger of
/// the dispatch and the combine config's hints (Config::get_nvl_buffer_size_hint /
/// get_rdma_buffer_size_hint). Zero for a size DeepEP has no config for.
DeepEpBuffers deepep_buffers(int ranks, double hidden_bytes, int num_sms = kDeepEpDefaultSms);

/// The EP communication buffers one GPU holds for the training's dispatcher: DeepEP's under
/// --moe-dispatcher deepep with an expert group of 2 or more, else none (the plain all-to-all
/// dispatcher allocates its outputs per call, counted with the activations).
double ep_buffer_bytes(const ModelSpec& model, const TrainingSpec& training,
                       const ParallelPlan& plan);

/// Whether the plan hides all-to-alls behind paired passes (DualPipe-V's F&B chunks under
/// torchtitan's pipeline_parallel_expert_parallel_overlap, Megatron-Core's combined 1F1B).
bool overlaps_all_to_all(const ParallelPlan& plan);

/// Share of a stage's micro-batches whose forward runs paired with another's backward, so that
/// each one's all-to-alls hide behind the other's compute (DualPipe's F&B chunks, DeepSeek-V3
/// Sec. 3.2.1; Megatron-Core's --overlap-moe-expert-parallel-comm pairs them the same way in
/// its 1F1B steady state). The warm-up forwards before the first backward run alone.
double paired_share(const ParallelPlan& plan, int micro_batches);

/// Exposed all-to-all time per micro-batch on a stage whose all-to-alls take `ep_s` beside
/// `compute_s` of forward and backward compute.
double exposed_all_to_all_s(const ParallelPlan& plan, int micro_batches, double ep_s,
                            double compute_s);

}  // namespace shardplan
