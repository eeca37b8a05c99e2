// Parameter counting: every weight matrix, bias and norm of a decoder-only transformer.
#include "shardplan/model.hpp"

#include <algorithm>

#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"

namespace shardplan {
namespace {

double norm_params(const ModelSpec& m) {
  // LayerNorm has a weight and a bias; RMSNorm a weight only.
  return m.norm == NormKind::layernorm ? 2.0 * m.hidden : 1.0 * m.hidden;
}

double mlp_matrices(const ModelSpec& m) {
  return m.gated_mlp() ? 3.0 : 2.0;
}

// One expert's (or the dense MLP's) parameters: up (and gate) and down projections.
double one_mlp(const ModelSpec& m) {
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  double p = mlp_matrices(m) * h * f;
  if (m.mlp_bias) p += (mlp_matrices(m) - 1.0) * f + h;
  return p;
}

}  // namespace

double local_kv_heads(const ModelSpec& model, int tp) {
  return std::max(1.0, static_cast<double>(model.kv_heads) / tp);
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  if (!m.has_architecture()) {
    c.total = c.active = m.params_only;
    return c;
  }
  const double h = m.hidden;
  const double q = static_cast<double>(m.heads) * m.head_dim;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim;

  LayerParams& l = c.layer;
  const double attention_matrices = h * q + 2.0 * h * kv + q * h;
  l.attention = attention_matrices + (m.qkv_bias ? q + 2.0 * kv : 0) + (m.out_bias ? h : 0);
  const double experts = m.is_moe() ? m.experts : 1;
  const double active_experts = m.is_moe() ? m.experts_per_token : 1;
  l.mlp = experts * one_mlp(m);
  l.mlp_active = active_experts * one_mlp(m);
  l.router = m.is_moe() ? h * m.experts : 0;
  l.norms = 2.0 * norm_params(m);
  l.matmul_active =
      attention_matrices + active_experts * mlp_matrices(m) * h * m.ffn_hidden + l.router;

  c.embedding = static_cast<double>(m.vocab) * h;
  c.positions = m.positions == PositionKind::learned ? static_cast<double>(m.max_positions) * h : 0;
  c.lm_head = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * h;
  c.final_norm = norm_params(m);
  const double outside_layers = c.embedding + c.positions + c.lm_head + c.final_norm;
  c.total = m.layers * l.total() + outside_layers;
  c.active = m.layers * (l.attention + l.mlp_active + l.router + l.norms) + outside_layers;
  return c;
}

DeviceParams device_params(const ModelSpec& m, const ParallelPlan& plan, int stage) {
  DeviceParams d;
  if (!m.has_architecture()) {
    // Without an architecture, tensor and pipeline parallelism split the count evenly.
    d.dense = m.params_only / (static_cast<double>(plan.tp) * plan.pp);
    d.largest_layer = d.dense;
    return d;
  }
  // The search calls this millions of times: only the pieces needed, no full count.
  SHARDPLAN_CHECK(stage >= 0 && stage < plan.pp, "stage out of range");
  const double t = plan.tp;
  const double h = m.hidden;
  const double q = static_cast<double>(m.heads) * m.head_dim / t;
  const double kv = local_kv_heads(m, plan.tp) * m.head_dim;

  // Column-parallel Q/K/V and row-parallel O are split; O's bias and the norms are replicated.
  const double attention =
      h * q + 2.0 * h * kv + q * h + (m.qkv_bias ? q + 2.0 * kv : 0) + (m.out_bias ? h : 0);
  const double f = m.ffn_hidden / t;
  double one_expert = mlp_matrices(m) * h * f;
  if (m.mlp_bias) one_expert += (mlp_matrices(m) - 1.0) * f + h;
  const double norms = 2.0 * norm_params(m);

  const int layers_here = stage_layers(m.layers, plan, stage);
  double dense_layer = attention + norms;
  double expert_layer = 0;
  if (m.is_moe()) {
    dense_layer += h * m.experts;  // the router, replicated
    expert_layer = one_expert * m.experts / plan.ep;
  } else {
    dense_layer += one_expert;
  }
  d.dense = layers_here * dense_layer;
  d.experts = layers_here * expert_layer;
  d.largest_layer = dense_layer + expert_layer;

  const bool first = stage == 0;
  const bool last = stage == head_stage(plan);
  // Vocabulary-parallel embedding and LM head (Megatron-LM VocabParallelEmbedding).
  const double table = static_cast<double>(m.vocab) * h / t;
  if (first)
    d.dense +=
        table +
        (m.positions == PositionKind::learned ? static_cast<double>(m.max_positions) * h : 0);
  if (last) {
    d.dense += norm_params(m);
    if (!m.tied_embeddings || !first) d.dense += table;  // a tied table elsewhere is a copy
  }
  return d;
}

}  // namespace shardplan
