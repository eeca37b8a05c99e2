// `shardplan emit`'s optimizer flags (--lr, --min-lr, --warmup-steps, ...) and --slurm.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "shardplan/emit.hpp"

namespace shardplan::cli {

struct OptimizerFlags {
  std::string lr, min_lr, warmup_steps, lr_decay, weight_decay, clip_grad, adam_betas, adam_eps;
};

void add_optimizer_options(CLI::App& app, OptimizerFlags& f);

/// The model family's published recipe with every given flag over it (named in `given`).
/// InputError naming the flag for a value the launchers refuse (min-lr above lr, betas outside
/// [0, 1), ...).
OptimizerSettings resolve_optimizer(const OptimizerFlags& f, const ModelSpec& model);

}  // namespace shardplan::cli
