// Per-device memory: ZeRO-sharded model states (Rajbhandari et al. 2020), activations from the
// op list in layer.cpp held for the in-flight micro-batches of each pipeline stage (Korthikanti
// et al. 2022), the transient peaks of recompute and ZeRO-3 gathers, and labelled overheads.
#include "shardplan/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/error.hpp"
#include "shardplan/layer.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/units.hpp"

namespace shardplan {
namespace {

// NCCL keeps send and receive buffers per channel and peer: NCCL_BUFFSIZE defaults to 4 MiB
// (NCCL environment-variable docs); 16 channels x 2 peers of a ring x 4 MiB = 128 MiB.
constexpr double kNcclBytesPerCommunicator = 16.0 * 2.0 * 4.0 * 1024.0 * 1024.0;

// Adafactor (Shazeer & Stern 2018) without momentum keeps one fp32 row and one column vector
// per weight matrix and a full fp32 second moment for vectors: bytes per parameter overall.
double adafactor_bytes_per_param(const ModelSpec& m) {
  if (!m.has_architecture()) return 0;
  const double h = m.hidden;
  const double q = static_cast<double>(m.heads) * m.head_dim;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim;
  const double f = m.ffn_hidden;
  const double experts = m.is_moe() ? m.experts : 1;
  const double up = m.gated_mlp() ? 2.0 * f : f;
  double per_layer = (h + q + 2.0 * kv) + (q + h) + experts * ((h + up) + (f + h));
  per_layer += 2.0 * h;  // norm vectors, unfactored
  const double tables = (m.vocab + h) * (m.tied_embeddings ? 1.0 : 2.0);
  const ParamCounts c = count_params(m);
  return 4.0 * (m.layers * per_layer + tables) / c.total;
}

}  // namespace

StateBytes state_bytes_per_param(const ModelSpec& m, const TrainingSpec& tr) {
  StateBytes b;
  const bool mixed = tr.precision != Precision::fp32;
  b.weights = mixed ? 2.0 : 4.0;
  // Transformer Engine caches an fp8 copy of each weight across micro-batches.
  if (tr.precision == Precision::fp8) b.weights += 1.0;
  b.gradients = mixed && !tr.fp32_grads ? 2.0 : 4.0;
  const double master = mixed ? 4.0 : 0.0;  // fp32 copy the optimizer updates
  switch (tr.optimizer) {
    case OptimizerKind::adamw: b.optimizer = master + 4.0 + 4.0; break;  // momentum + variance
    case OptimizerKind::sgd_momentum: b.optimizer = master + 4.0; break;
    case OptimizerKind::adafactor: b.optimizer = master + adafactor_bytes_per_param(m); break;
    case OptimizerKind::adam_8bit:
      // bitsandbytes blockwise 8-bit states: 1 byte each for momentum and variance, plus an
      // fp32 absmax per 256-element block for each (Dettmers et al. 2022).
      b.optimizer = master + 2.0 + 2.0 * 4.0 / 256.0;
      break;
  }
  return b;
}

double layers_in_flight(int layers, const ParallelPlan& p, int micro_batches, int stage) {
  const double v = p.interleave;
  if (p.pp == 1) return layers;  // accumulation runs micro-batches one after another
  if (p.interleave == 1) {
    const double in_flight = std::min(p.pp - stage, micro_batches);
    return in_flight * layers / p.pp;
  }
  const double chunks = std::min((p.pp - stage - 1) * 2.0 + (v - 1.0) * p.pp + 1.0,
                                 static_cast<double>(micro_batches) * v);
  return chunks * layers / (p.pp * v);
}

MemoryBreakdown estimate_memory(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p,
                                const ClusterSpec& c) {
  MemoryBreakdown out;
  out.capacity_bytes = c.gpu.memory_bytes;
  out.bytes_per_param = state_bytes_per_param(m, tr);
  out.activations_known = m.has_architecture();
  const ParamCounts counts = count_params(m);
  out.total_params = counts.total;
  const StateBytes& per = out.bytes_per_param;

  // ZeRO shards over every rank that holds the same weights: dp x cp for dense weights, and
  // dp x cp / ep for experts (Megatron-LM's expert-data-parallel group).
  const double replicas = static_cast<double>(p.dp) * p.cp;
  const double expert_replicas = replicas / p.ep;
  auto shard = [&](double dense, double experts, double bytes, bool sharded) {
    return sharded ? bytes * (dense / replicas + experts / expert_replicas)
                   : bytes * (dense + experts);
  };

  const int micro_batches = std::max(1, micro_batches_per_step(tr, p));
  MicroBatchWork work;
  if (m.has_architecture()) work = describe_micro_batch(m, tr, p);

  int communicators = 0;
  if (replicas > 1) ++communicators;
  if (p.tp > 1) ++communicators;
  if (p.pp > 1) communicators += 2;  // send to the next stage, receive from the previous
  if (p.cp > 1) ++communicators;
  if (p.ep > 1) ++communicators;

  for (int stage = 0; stage < p.pp; ++stage) {
    StageMemory s;
    s.stage = stage;
    const DeviceParams dev = device_params(m, p, stage);
    s.params = dev.total();
    s.weights_bytes = shard(dev.dense, dev.experts, per.weights, p.zero >= 3);
    s.gradients_bytes = shard(dev.dense, dev.experts, per.gradients, p.zero >= 2);
    s.optimizer_bytes = shard(dev.dense, dev.experts, per.optimizer, p.zero >= 1);

    double dynamic = 0;  // what the allocator hands out and takes back each step
    if (m.has_architecture()) {
      s.layers_in_flight = layers_in_flight(m.layers, p, micro_batches, stage);
      s.layer_activations_bytes = s.layers_in_flight * saved_activation_bytes(work.layer, p.recompute);
      s.activations_bytes = s.layer_activations_bytes;
      const bool first = stage == 0;
      const bool last = stage == p.pp - 1;
      if (first) {
        const double in_flight = p.pp == 1 ? 1.0 : std::min(p.pp, micro_batches);
        s.activations_bytes += in_flight * saved_activation_bytes(work.embedding, Recompute::none);
      }
      if (last) s.activations_bytes += saved_activation_bytes(work.head, Recompute::none);
      if (p.recompute == Recompute::full) {
        s.transients.push_back({"recompute working set", full_saved_bytes(work.layer),
                                "one layer's activations rebuilt during its backward"});
      }
      if (last) {
        const double logits = work.tokens * m.vocab / p.tp * activation_bytes(tr.precision);
        s.transients.push_back({"logits", logits, "16-bit logits before the fp32 loss"});
      }
      dynamic += s.activations_bytes;
    }
    if (p.zero >= 3) {
      // ZeRO-3/FSDP gather one layer at a time and prefetch the next; the gathered layer's
      // gradient exists in full until it is reduce-scattered.
      const double layer = dev.largest_layer;
      s.transients.push_back({"gathered layers", 2.0 * layer * per.weights,
                              "the current and the prefetched layer, unsharded"});
      s.transients.push_back({"unsharded layer gradient", layer * per.gradients,
                              "held until its reduce-scatter"});
    }
    for (const OverheadLine& t : s.transients) s.transient_bytes += t.bytes;
    dynamic += s.transient_bytes;

    s.overheads.push_back({"CUDA context and workspaces", c.gpu.context_bytes,
                           "measured CUDA context + cuBLAS/cuDNN workspaces (GPU profile)"});
    if (communicators > 0) {
      s.overheads.push_back(
          {"NCCL buffers", communicators * kNcclBytesPerCommunicator,
           fmt::format("{} communicator(s) x 128 MiB (16 channels x 2 peers x NCCL_BUFFSIZE 4 MiB)",
                       communicators)});
    }
    s.overheads.push_back({"allocator fragmentation", tr.fragmentation * dynamic,
                           fmt::format("{:.0f}% of activations and transients held in the "
                                       "caching allocator's free blocks",
                                       tr.fragmentation * 100)});
    for (const OverheadLine& o : s.overheads) s.overhead_bytes += o.bytes;
    s.total_bytes = s.weights_bytes + s.gradients_bytes + s.optimizer_bytes +
                    s.activations_bytes + s.transient_bytes + s.overhead_bytes;
    out.stages.push_back(std::move(s));
  }
  for (size_t i = 1; i < out.stages.size(); ++i) {
    if (out.stages[i].total_bytes > out.stages[out.worst_stage].total_bytes) {
      out.worst_stage = static_cast<int>(i);
    }
  }
  out.gathered_layer_bytes =
      m.has_architecture() ? counts.layer.total() * per.weights : 0;
  out.fits = out.total_bytes() <= out.capacity_bytes;
  if (!m.has_architecture()) {
    out.notes.push_back(
        "activations unknown: only the parameter count was given; pass --model or "
        "--layers/--hidden/--heads for activation memory");
  }
  return out;
}

}  // namespace shardplan
