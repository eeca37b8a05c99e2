// Shared facts about a parallel plan's shape: layers per stage and chunk, micro-batches, a
// description. Whether a plan can run at all is rules.hpp.
#pragma once

#include <string>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

/// The one way a plan is made from its choices (the CLI's flags, a point of the search):
/// `choices` with dp set to what tp x pp x cp leave of `gpus`, or 0 when they do not divide
/// them (a plan the gpu_count rule refuses). Write the choices as one designated initializer,
/// `plan_over(gpus, {.tp = 8, .pp = 2, .zero = 1})`, so that no field is set twice or in pieces.
ParallelPlan plan_over(int gpus, ParallelPlan choices);

/// Transformer layers on pipeline stage (device) `stage`: the sum of its model chunks. With one
/// chunk per device and no layout given, the extra layers of an uneven split go to the middle
/// stages first, because the first stage also holds the embedding and the last the LM head:
/// BLOOM's 70 layers on 12 stages are 5, 6 x 10, 5.
int stage_layers(int layers, const ParallelPlan& plan, int stage);

/// Transformer layers of virtual stage `chunk` (0 .. pp x interleave - 1, in model order). The
/// first and last take --first-stage-layers / --last-stage-layers when given and the rest split
/// evenly, as Megatron-Core's num_layers_in_first/last_pipeline_stage and torchtitan's
/// pipeline_parallel_first/last_stage_less_layers do. Llama 3 405B: 126 layers on pp 16 x 2
/// chunks, first and last 3, the others 4 (Dubey et al. 2024 Sec. 3.3.2: one layer fewer on the
/// first and last stage; what Megatron-Core's --account-for-embedding-in-pipeline-split and
/// --account-for-loss-in-pipeline-split give when the embedding and loss count as layers).
int chunk_layers(int layers, const ParallelPlan& plan, int chunk);

/// The device (pipeline rank) that runs virtual stage `chunk`: chunk mod pp in Megatron-LM's
/// interleaving, a V (d and 2p - 1 - d) in ZB-V and DualPipeV.
int chunk_device(const ParallelPlan& plan, int chunk);

/// The model's first layer in virtual stage `chunk`: the layers of the chunks before it.
int chunk_first_layer(int layers, const ParallelPlan& plan, int chunk);

/// The k-th (0 .. interleave - 1) chunk pipeline device `stage` runs, in model order: d + k pp in
/// Megatron-LM's interleaving, d and 2 pp - 1 - d in a V (chunk_device's inverse).
int stage_chunk(const ParallelPlan& plan, int stage, int k);

/// Calls f(first_layer, layers) for each model chunk that pipeline device `stage` runs, in model
/// order: one run of consecutive layers without interleaving, interleave runs spread over the
/// model with it.
template <typename F>
void for_each_stage_chunk(int layers, const ParallelPlan& plan, int stage, F&& f) {
  for (int k = 0; k < plan.interleave; ++k) {
    const int c = stage_chunk(plan, stage, k);
    f(chunk_first_layer(layers, plan, c), chunk_layers(layers, plan, c));
  }
}

/// The device that holds the LM head and the loss: the last, or the first in a V schedule.
int head_stage(const ParallelPlan& plan);

/// Layers left for the virtual stages that the first and last stage's counts do not fix, and how
/// many such stages there are; `custom` when either count is given.
struct LayoutRest {
  int layers = 0;
  int chunks = 0;
  bool custom = false;
};
LayoutRest layout_rest(int layers, const ParallelPlan& plan);

/// Whether the layers split into the plan's virtual stages: every chunk gets the same share
/// after the first and last stage's given counts (or the layers divide evenly with interleaving),
/// and the middle chunks are not empty.
bool layout_splits(int layers, const ParallelPlan& plan);

/// Micro-batches each pipeline runs per optimizer step (gradient accumulation steps).
int micro_batches_per_step(const TrainingSpec& training, const ParallelPlan& plan);

/// Whether every tensor-parallel rank runs the loss on the gathered full-vocabulary logits
/// (TrainingSpec::full_vocab_loss under TP); else each holds its 1/tp share.
bool gathers_vocabulary(const TrainingSpec& training, const ParallelPlan& plan);

/// A one-line description such as "dp 8 x tp 8 x pp 16, ZeRO-1, micro-batch 1, selective".
std::string describe(const ParallelPlan& plan);

}  // namespace shardplan
