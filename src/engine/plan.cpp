// Shared facts about a plan's shape: layers per stage, micro-batches per step, its description.
#include "shardplan/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>

#include "shardplan/schedule.hpp"

namespace shardplan {

ParallelPlan plan_over(int gpus, ParallelPlan choices) {
  const long long model_parallel = static_cast<long long>(choices.tp) * choices.pp * choices.cp;
  choices.dp = model_parallel > 0 && gpus % model_parallel == 0
                   ? static_cast<int>(gpus / model_parallel)
                   : 0;
  return choices;
}

LayoutRest layout_rest(int layers, const ParallelPlan& p) {
  LayoutRest r{layers, p.pp * p.interleave, false};
  if (p.first_stage_layers >= 0) {
    r.layers -= p.first_stage_layers;
    --r.chunks;
    r.custom = true;
  }
  if (p.last_stage_layers >= 0) {
    r.layers -= p.last_stage_layers;
    --r.chunks;
    r.custom = true;
  }
  return r;
}

namespace {

// One chunk per device, no layout given: the extra layers go to the middle stages, then the
// last, then the first.
int default_stage_layers(int layers, const ParallelPlan& p, int stage) {
  const int base = layers / p.pp;
  const int extra = layers % p.pp;
  if (extra == 0) return base;
  const int order = stage == 0 ? p.pp - 1 : stage == p.pp - 1 ? p.pp - 2 : stage - 1;
  return base + (order < extra ? 1 : 0);
}

}  // namespace

int chunk_layers(int layers, const ParallelPlan& p, int chunk) {
  const int chunks = p.pp * p.interleave;
  if (chunk == 0 && p.first_stage_layers >= 0) return p.first_stage_layers;
  if (chunk == chunks - 1 && p.last_stage_layers >= 0) return p.last_stage_layers;
  const LayoutRest r = layout_rest(layers, p);
  if (!r.custom && p.interleave == 1) return default_stage_layers(layers, p, chunk);
  return r.chunks > 0 ? r.layers / r.chunks : 0;
}

int chunk_first_layer(int layers, const ParallelPlan& p, int chunk) {
  if (chunk <= 0) return 0;
  const LayoutRest r = layout_rest(layers, p);
  if (!r.custom && p.interleave == 1) {
    int first = 0;
    for (int s = 0; s < chunk; ++s) first += default_stage_layers(layers, p, s);
    return first;
  }
  // Every chunk but the first and the last holds the even share of the rest.
  const int even = r.chunks > 0 ? r.layers / r.chunks : 0;
  return chunk_layers(layers, p, 0) + (chunk - 1) * even;
}

int stage_chunk(const ParallelPlan& p, int stage, int k) {
  if (is_v_shape(p.schedule) && p.interleave == 2) return k == 0 ? stage : 2 * p.pp - 1 - stage;
  return stage + k * p.pp;
}

int chunk_device(const ParallelPlan& p, int chunk) {
  if (is_v_shape(p.schedule) && p.interleave == 2)
    return chunk < p.pp ? chunk : 2 * p.pp - 1 - chunk;
  return chunk % p.pp;
}

int head_stage(const ParallelPlan& p) {
  return is_v_shape(p.schedule) && p.interleave == 2 ? 0 : p.pp - 1;
}

int stage_layers(int layers, const ParallelPlan& p, int stage) {
  int sum = 0;
  for (int k = 0; k < p.interleave; ++k) sum += chunk_layers(layers, p, stage_chunk(p, stage, k));
  return sum;
}

bool layout_splits(int layers, const ParallelPlan& p) {
  const LayoutRest r = layout_rest(layers, p);
  if (!r.custom) return p.interleave == 1 ? p.pp <= layers : layers % (p.pp * p.interleave) == 0;
  if (r.layers < 0 || p.pp * p.interleave < 2) return false;
  if (r.chunks == 0) return r.layers == 0;
  return r.layers % r.chunks == 0 && r.layers / r.chunks > 0;
}

int micro_batches_per_step(const TrainingSpec& training, const ParallelPlan& plan) {
  const long long per_step = static_cast<long long>(plan.dp) * plan.micro_batch;
  return per_step > 0 ? static_cast<int>(training.global_batch / per_step) : 0;
}

bool gathers_vocabulary(const TrainingSpec& training, const ParallelPlan& plan) {
  return training.full_vocab_loss && plan.tp > 1;
}

std::string describe(const ParallelPlan& p) {
  std::string s = fmt::format("dp {} x tp {} x pp {}", p.dp, p.tp, p.pp);
  if (p.cp > 1) s += fmt::format(" x cp {}", p.cp);
  if (p.ep > 1) s += fmt::format(", ep {}", p.ep);
  if (p.etp > 0) s += fmt::format(", expert tp {}", p.etp);
  if (p.moe_a2a_overlap) s += " (all-to-alls overlapped)";
  s += fmt::format(", ZeRO-{}", p.zero);
  if (p.dp_shard > 0)
    s += fmt::format(" (HSDP: shard {} x replicate {})", p.dp_shard, p.dp / std::max(1, p.dp_shard));
  s += fmt::format(", micro-batch {}, recompute {}", p.micro_batch, to_string(p.recompute));
  if (p.recompute_modules != 0) s += " (" + recompute_modules_text(p.recompute_modules, ", ") + ")";
  if (p.sequence_parallel) s += ", sequence parallel";
  if (p.interleave > 1) s += fmt::format(", interleave {}", p.interleave);
  if (p.pp > 1) s += fmt::format(", schedule {}", schedule_name(p));
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    s += fmt::format(", first/last stage {}/{} layers",
                     p.first_stage_layers >= 0 ? std::to_string(p.first_stage_layers) : "even",
                     p.last_stage_layers >= 0 ? std::to_string(p.last_stage_layers) : "even");
  }
  if (p.offload.any()) {
    const Offload& o = p.offload;
    std::vector<const char*> parts;
    if (o.optimizer) parts.push_back("optimizer");
    if (o.params) parts.push_back("params");
    if (o.activations) parts.push_back("activations");
    if (!parts.empty())
      s += fmt::format(", offload {} to {}", fmt::join(parts, "+"), to_string(o.to));
    if (o.activation_layers > 0)
      s += fmt::format(", activations of {} layers offloaded to {}", o.activation_layers,
                       to_string(o.to));
  }
  return s;
}

}  // namespace shardplan
