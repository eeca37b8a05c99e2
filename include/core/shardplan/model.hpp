// Parameter counts from architecture, whole-model and per device under a parallel plan.
#pragma once

#include "shardplan/specs.hpp"

namespace shardplan {

/// Parameters of one transformer layer, split by where tensor parallelism puts them.
struct LayerParams {
  double attention = 0;   // Q, K, V, O matrices and their biases
  double mlp = 0;         // all experts' matrices and biases (dense: the one MLP)
  double mlp_active = 0;  // the experts one token visits (dense: == mlp)
  double router = 0;
  double norms = 0;
  double total() const { return attention + mlp + router + norms; }
  /// Matrix parameters a token multiplies by (for FLOP counts): no biases or norms.
  double matmul_active = 0;
};

struct ParamCounts {
  LayerParams layer;     // one layer (all layers are alike)
  double embedding = 0;  // token embedding table
  double positions = 0;  // learned position table
  double lm_head = 0;    // output projection; 0 when tied to the embedding
  double final_norm = 0;
  double total = 0;
  double active = 0;  // parameters a token touches (== total for dense models)
};

/// Exact counts from the architecture. For a params-only model, total = params_only and the
/// rest is zero. Reproduces published counts (Llama-2-7B 6,738,415,616; Llama-3-8B
/// 8,030,261,248; Mixtral-8x7B 46,702,792,704; see tests/engine/model_test.cpp).
ParamCounts count_params(const ModelSpec& model);

/// Parameters held by one device of a pipeline stage, before any ZeRO sharding: tensor
/// parallelism splits the matrices (replicating norms and row-parallel biases), expert
/// parallelism splits the experts, and each stage holds its layers plus, on the first stage, the
/// embedding (and position table) and, on the last, the final norm and LM head (a tied LM head
/// is a second copy of the embedding there when pp > 1, as Megatron-LM keeps it).
struct DeviceParams {
  double dense = 0;    // replicated across the data-parallel group (dp * cp)
  double experts = 0;  // replicated across dp * cp / ep only
  double total() const { return dense + experts; }
  double largest_layer = 0;  // one layer's parameters on this device (for ZeRO-3 gathers)
};
DeviceParams device_params(const ModelSpec& model, const ParallelPlan& plan, int stage);

/// Local K/V heads per tensor-parallel rank: kv_heads / tp, or 1 when tp > kv_heads
/// (Megatron-LM replicates query groups).
double local_kv_heads(const ModelSpec& model, int tp);

}  // namespace shardplan
