// Whether a parallel plan can run at all: divisibility and placement rules of the frameworks.
#pragma once

#include <string>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

/// A reason a plan cannot run, naming the flag that would fix it.
struct PlanProblem {
  std::string field;    // e.g. "--tp"
  std::string message;  // what is wrong and what would be valid
};

struct PlanRules {
  bool allow_tp_across_nodes = false;
};

/// Every rule the plan breaks (empty when it can run): degrees multiply to the GPU count, tp
/// divides the heads (and the KV heads or is a multiple of them), pp is at most the layers (and
/// pp * v divides them with interleaving), the global batch divides into micro-batches per
/// data-parallel rank, tp stays inside a node, sequence parallel needs tp > 1, ep divides dp * cp
/// and the experts.
std::vector<PlanProblem> check_plan(const ModelSpec& model, const TrainingSpec& training,
                                    const ParallelPlan& plan, const ClusterSpec& cluster,
                                    const PlanRules& rules = {});

/// Transformer layers on a pipeline stage. When pp does not divide the layers, the extra layers
/// go to the middle stages first, because the first stage also holds the embedding and the last
/// the LM head: Llama 3 405B's 126 layers on 16 stages are 7, 8 x 14, 7 (Dubey et al. 2024
/// Sec. 3.3.2), BLOOM's 70 on 12 are 5, 6 x 10, 5. Interleaved schedules need equal chunks.
int stage_layers(int layers, const ParallelPlan& plan, int stage);

/// Micro-batches each pipeline runs per optimizer step (gradient accumulation steps).
int micro_batches_per_step(const TrainingSpec& training, const ParallelPlan& plan);

/// A one-line description such as "dp 8 x tp 8 x pp 16, ZeRO-1, micro-batch 1, selective".
std::string describe(const ParallelPlan& plan);

}  // namespace shardplan
