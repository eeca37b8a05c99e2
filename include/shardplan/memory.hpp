// Per-device memory for one plan: model states, activations and overheads, per pipeline stage.
#pragma once

#include <string>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

/// Bytes per parameter of each model state for a precision and optimizer, before sharding.
/// Mixed-precision AdamW: 2 (bf16 weights) + 2 (bf16 grads) + 12 (fp32 master 4, momentum 4,
/// variance 4) = 16 (Rajbhandari et al. 2020, ZeRO, Sec. 3.1).
struct StateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
StateBytes state_bytes_per_param(const ModelSpec& model, const TrainingSpec& training);

/// A labelled line whose size rests on an assumption the output states.
struct OverheadLine {
  std::string label;
  double bytes = 0;
  std::string assumption;
};

struct StageMemory {
  int stage = 0;
  double params = 0;             // parameters this device holds before ZeRO sharding
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;  // saved for backward, all in-flight micro-batches
  double layer_activations_bytes = 0;  // the transformer layers' share (Korthikanti's formulas)
  double transient_bytes = 0;    // peaks that come and go: see `transients`
  double overhead_bytes = 0;
  double total_bytes = 0;
  double layers_in_flight = 0;   // layer-micro-batches whose activations are held at once
  std::vector<OverheadLine> transients;
  std::vector<OverheadLine> overheads;
};

struct MemoryBreakdown {
  std::vector<StageMemory> stages;  // one per pipeline stage
  int worst_stage = 0;              // the most-loaded device
  bool activations_known = true;    // false when only the parameter count is known
  double capacity_bytes = 0;
  bool fits = false;
  StateBytes bytes_per_param;
  double total_params = 0;
  double gathered_layer_bytes = 0;  // one layer's full weights (what ZeRO-3 gathers)
  std::vector<std::string> notes;   // assumptions worth printing

  const StageMemory& worst() const { return stages[worst_stage]; }
  double total_bytes() const { return worst().total_bytes; }
  double margin_bytes() const { return capacity_bytes - total_bytes(); }
};

/// Memory of every pipeline stage's device. The plan must be valid (see validate_plan).
MemoryBreakdown estimate_memory(const ModelSpec& model, const TrainingSpec& training,
                                const ParallelPlan& plan, const ClusterSpec& cluster);

/// Layer-micro-batches of activations a pipeline stage holds at the 1F1B peak: p - i
/// micro-batches of L/p layers (Narayanan et al. 2021), or with v virtual stages
/// (p - i - 1) * 2 + (v - 1) * p + 1 model chunks of L/(p v) layers (Megatron-LM's interleaved
/// warm-up), capped by the micro-batches there are. Stage 0 holds L (1 + (p-1)/(p v)) layers'
/// worth, Korthikanti et al. 2022 Sec. 4.2.3.
double layers_in_flight(int layers, const ParallelPlan& plan, int micro_batches, int stage);

}  // namespace shardplan
