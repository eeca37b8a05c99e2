// Shared facts about a plan's shape: layers per stage, micro-batches per step, its description.
#include "shardplan/plan.hpp"

#include <fmt/format.h>

#include <string>

namespace shardplan {

int stage_layers(int layers, const ParallelPlan& p, int stage) {
  const int base = layers / p.pp;
  const int extra = layers % p.pp;
  if (extra == 0) return base;
  // Order in which stages take one more layer: the middle ones, then the last, then the first.
  const int order = stage == 0 ? p.pp - 1 : stage == p.pp - 1 ? p.pp - 2 : stage - 1;
  return base + (order < extra ? 1 : 0);
}

int micro_batches_per_step(const TrainingSpec& training, const ParallelPlan& plan) {
  const long long per_step = static_cast<long long>(plan.dp) * plan.micro_batch;
  return per_step > 0 ? static_cast<int>(training.global_batch / per_step) : 0;
}

std::string describe(const ParallelPlan& p) {
  std::string s = fmt::format("dp {} x tp {} x pp {}", p.dp, p.tp, p.pp);
  if (p.cp > 1) s += fmt::format(" x cp {}", p.cp);
  if (p.ep > 1) s += fmt::format(", ep {}", p.ep);
  s += fmt::format(", ZeRO-{}, micro-batch {}, recompute {}", p.zero, p.micro_batch,
                   to_string(p.recompute));
  if (p.sequence_parallel) s += ", sequence parallel";
  if (p.interleave > 1) s += fmt::format(", interleave {}", p.interleave);
  return s;
}

}  // namespace shardplan
