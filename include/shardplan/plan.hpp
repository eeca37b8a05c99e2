// Shared facts about a parallel plan's shape: layers per stage, micro-batches, a description.
#pragma once

#include <string>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

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
