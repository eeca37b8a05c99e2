// Parameter counts from architecture, whole-model and per device under a parallel plan.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

/// Parameters of one transformer layer, split by where tensor parallelism puts them.
struct LayerParams {
  double attention = 0;  // Q, K, V, O matrices (MLA: its down/up projections), biases, QK norms
  double mlp = 0;  // all experts' matrices and biases, shared experts included (dense: the MLP)
  double mlp_active = 0;  // the experts one token visits, shared ones included (dense: == mlp)
  double router = 0;      // router (and its bias), Qwen2-MoE's shared-expert gate
  double norms = 0;
  double total() const { return attention + mlp + router + norms; }
  double active() const { return attention + mlp_active + router + norms; }
  /// Matrix parameters a token multiplies by (for FLOP counts): no biases or norms.
  double matmul_active = 0;
};

struct ParamCounts {
  LayerParams layer;        // one MoE layer (a dense model: its one kind of layer)
  LayerParams dense_layer;  // one dense layer of a MoE model (== layer for dense models)
  int moe_layers = 0;       // layers of the `layer` kind; the rest are `dense_layer`
  int dense_layers = 0;
  double layers_matmul_active = 0;  // summed over all layers
  double embedding = 0;             // token embedding table
  double positions = 0;             // learned position table
  double lm_head = 0;               // output projection; 0 when tied to the embedding
  double final_norm = 0;
  double total = 0;
  double active = 0;  // parameters a token touches (== total for dense models)
  /// DeepSeek-V3's multi-token-prediction modules (one more layer, a projection and two norms
  /// each; embedding and head shared): not in `total`, as DeepSeek's 671B excludes them.
  double mtp = 0;
  /// Hybrids: layers whose mixer is linear (a gated DeltaNet or lightning attention) or a Mamba-2
  /// (already in total and active) and one such mixer's parameters; `layer` and `dense_layer`
  /// describe softmax-attention layers.
  int linear_attention_layers = 0;
  double linear_attention = 0;
  int mamba_layers = 0;
  double mamba = 0;
  /// The largest layer's parameters (what a ZeRO-3 gather brings in at once).
  double largest_layer = 0;
};

/// Exact counts from the architecture. For a params-only model, total = params_only and the
/// rest is zero. Reproduces published counts (Llama-2-7B 6,738,415,616; Llama-3-8B
/// 8,030,261,248; Mixtral-8x7B 46,702,792,704; Gemma-2-9B 9,241,705,984; DeepSeek-V3 671B;
/// see tests/engine/model_test.cpp).
ParamCounts count_params(const ModelSpec& model);

/// Parameters held by one device of a pipeline stage, before any ZeRO sharding: tensor
/// parallelism splits the matrices (replicating norms, row-parallel biases, the router and MLA's
/// down projections, as Megatron-Core does), expert parallelism and expert tensor parallelism
/// split the routed experts (shared experts are dense weights, split by tp), and each stage holds
/// its layers plus, on the first stage, the embedding (and position table) and, on the last, the
/// final norm and LM head (a tied LM head is a second copy of the embedding there when pp > 1, as
/// Megatron-LM keeps it).
struct DeviceParams {
  double dense = 0;    // replicated across the data-parallel group (dp * cp)
  double experts = 0;  // replicated across tp * dp * cp / (ep * etp) only
  double total() const { return dense + experts; }
  double largest_layer = 0;  // one layer's parameters on this device (for ZeRO-3 gathers)
};
DeviceParams device_params(const ModelSpec& model, const ParallelPlan& plan, int stage);

/// What one pipeline's plans ask of the model's stages, each counted once: device_params per
/// stage and heaviest_moe_stage. The search evaluates many plans that differ only in fields
/// neither reads (ZeRO, recompute, offload, all-to-all overlap, shard group); one memo answers
/// them all. It starts again when asked about a plan whose pipeline (tp, pp, ep, expert tp,
/// virtual stages, schedule, end layouts) differs from the one it holds, so an answer never
/// outlives its pipeline.
class StageParamsMemo {
 public:
  explicit StageParamsMemo(const ModelSpec& model) : model_(model) {}
  DeviceParams of(const ParallelPlan& plan, int stage);
  int heaviest_moe_stage(const ParallelPlan& plan);

 private:
  void hold(const ParallelPlan& plan);  // forgets the answers when the pipeline changes
  const ModelSpec& model_;
  std::array<int, 8> pipeline_{};
  std::vector<std::pair<int, DeviceParams>> stages_;
  int heaviest_moe_stage_ = -1;  // not asked yet
};

/// Local K/V heads per tensor-parallel rank: kv_heads / tp, or 1 when tp > kv_heads
/// (Megatron-LM replicates query groups).
double local_kv_heads(const ModelSpec& model, int tp);

/// Share of a causal attention's query-key score matrix (seq_len x seq_len) a layer computes,
/// averaged over the layers: 1/2 for full causal attention; a sliding window of w < s keys
/// computes s*w - w^2/2 of the s^2 (Gemma 2 / Gemma 3 local layers).
double causal_attention_density(const ModelSpec& model, double seq_len);

/// Query-key pairs per sequence summed over the layers, in the model-FLOPs convention that
/// counts the full s^2 for global layers (Korthikanti et al. 2022 Eq. 7): s * min(s, w) for
/// sliding-window layers.
double attended_pairs(const ModelSpec& model, double seq_len);

/// The training sequence length used when --seq-len is not given: the model's own pre-training
/// context, capped at kDefaultSeqLenCap tokens so that a preset and the config.json of the same
/// model (Qwen2.5-7B: 32,768 in its report, 131,072 in its config) train alike by default.
inline constexpr int kDefaultSeqLenCap = 8192;
int default_training_seq_len(const ModelSpec& model);

/// MoE layers among a pipeline stage's layers (its chunks' layers, spread over the model when
/// interleaved: for_each_stage_chunk).
int stage_moe_layers(const ModelSpec& model, const ParallelPlan& plan, int stage);

/// A MoE model with dense layers (DeepSeek-V3's first three) holds its experts from a later
/// stage on: the middle stage with the most MoE layers, the earliest of them (the most
/// activations in flight). 0 when the model has no dense layers or no middle stage holds more
/// MoE layers than the second; the memory peak and the step's middle stage look there too.
int heaviest_moe_stage(const ModelSpec& model, const ParallelPlan& plan);

/// device_params and heaviest_moe_stage answered from a memo when the caller has one (the
/// search), computed afresh when it is null: one fork for memory and step time alike.
DeviceParams device_params(const ModelSpec& model, const ParallelPlan& plan, int stage,
                           StageParamsMemo* memo);
int heaviest_moe_stage(const ModelSpec& model, const ParallelPlan& plan, StageParamsMemo* memo);

/// " hybrid: 24 Mamba-2, 4 attention": a hybrid's mixers and the layers that run each; "" for a
/// model whose every layer is softmax attention.
std::string hybrid_mixers(const ModelSpec& m);

}  // namespace shardplan
