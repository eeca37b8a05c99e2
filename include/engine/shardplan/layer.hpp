// What one device does for one micro-batch: the ops of a transformer layer (and of the embedding
// and LM head), each with its FLOPs, memory traffic and the tensors it saves for backward.
// Activation memory and compute time are both sums over these ops, so they cannot disagree.
#pragma once

#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

enum class OpKind {
  gemm,         // cuBLAS matmul, time from the GPU's efficiency curve
  attention,    // fused (flash) attention kernel
  elementwise,  // memory-bound kernel: norms, activations, softmax, dropout, residuals
};

struct Op {
  const char* name = "";
  OpKind kind = OpKind::elementwise;
  // GEMM shape (per call): `batch` independent m x k by k x n products.
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0;           // forward FLOPs executed
  double bytes = 0;           // forward memory traffic of an elementwise op
  double saved_bytes = 0;     // tensors kept for backward
  double backward_flops = 0;  // FLOPs of the backward pass (GEMM: dgrad + wgrad = 2x forward)
  // Selective recompute (specs.hpp RecomputeModule): the modules whose recompute runs this op's
  // forward again, and those whose recompute frees `freeable_bytes` of what it saves.
  unsigned rerun_by = 0;
  unsigned frees_by = 0;
  double freeable_bytes = 0;
  // The same resolved for the plan's selective recompute (describe_micro_batch): whether the
  // op runs again before backward, and the bytes of saved_bytes it no longer keeps.
  bool selective = false;
  double selective_freed_bytes = 0;
  // A grouped GEMM (the routed experts of a MoE layer): `batch` experts in one kernel, each its
  // own problem, so each reaches the efficiency of an m x n x k GEMM, not of the whole launch.
  bool grouped = false;
};

/// The collectives tensor parallelism (and sequence parallelism) issues per layer.
struct TpTraffic {
  double bytes = 0;     // one full activation tensor (s * b * h) in the activation dtype
  int all_reduces = 0;  // per forward pass (no sequence parallel)
  int gathers = 0;      // all-gathers per forward pass (sequence parallel)
  int scatters = 0;     // reduce-scatters per forward pass (sequence parallel)
  // Backward runs each forward collective's conjugate (all-reduce <-> identity and
  // all-gather <-> reduce-scatter); sequence parallelism also re-gathers the sharded inputs it
  // saved, for the weight gradients (Korthikanti et al. 2022 Sec. 4.2.2).
  int backward_regathers = 0;
};

/// One block of work with the traffic that goes with it.
struct Block {
  std::vector<Op> ops;
  TpTraffic tp;
  double input_bytes = 0;     // the block's input, kept per layer under full recompute
  double expert_tokens = 0;   // tokens this device routes to experts per forward pass
  double expert_visits = 0;   // token-visits this device sends to experts per forward pass
  double expert_gather = 1;   // expert-TP members whose received token-visits each one runs
};

/// Everything a micro-batch asks of one device, per layer and at the two ends of the model.
struct MicroBatchWork {
  Block layer;         // one transformer layer (a MoE model: one MoE layer)
  Block dense_layer;   // a MoE model's dense layers (== layer when all layers are alike)
  int moe_layers = 0;  // how many of the model's layers are MoE layers
  int dense_layers = 0;
  Block embedding;              // first pipeline stage only
  Block head;                   // last pipeline stage only: final norm, LM head, loss
  double loss_saved_bytes = 0;  // of head: the fp32 softmax the loss keeps for its backward
  // A full-vocabulary loss under TP (TrainingSpec::full_vocab_loss): the logits' all-gather in
  // forward, the whole gathered tensor (its backward is a local split, no collective).
  double loss_gather_bytes = 0;
  // One multi-token-prediction module beside its transformer layer (a `layer`-kind layer):
  // the two input norms, the 2h -> h projection, and the LM head and loss it shares with the
  // main model (DeepSeek-V3 Sec. 2.2). On the LM head's stage, `mtp_layers` of them.
  Block mtp;
  int mtp_layers = 0;
  double tokens = 0;            // tokens of one micro-batch on this device (s/cp * b)
};

/// Describes the work; needs a model with an architecture.
MicroBatchWork describe_micro_batch(const ModelSpec& model, const TrainingSpec& training,
                                    const ParallelPlan& plan);

/// Activation bytes a block keeps between its forward and backward under a recompute policy.
/// Full recompute keeps only the block input; the recompute working set is reported apart.
double saved_activation_bytes(const Block& block, Recompute recompute);

/// Everything the block saves when nothing is recomputed (the working set of a layer being
/// recomputed under full recompute).
double full_saved_bytes(const Block& block);

}  // namespace shardplan
