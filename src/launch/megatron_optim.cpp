// The optimizer and learning-rate schedule in pretrain_gpt.py's flags: --lr has no default
// (arguments.py _add_learning_rate_args: default None) and OptimizerParamScheduler.__init__ does
// float(max_lr), asserts min_lr <= max_lr, lr_decay_steps > 0 and lr_warmup_steps <
// lr_decay_steps (megatron/core/optimizer_param_scheduler.py; training.py
// get_optimizer_param_scheduler sets lr_decay_iters to train_iters when it is not given).
// NVIDIA/Megatron-LM commit d98e8a64.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common.hpp"
#include "megatron_args.hpp"

namespace shardplan::emit {
namespace {

// Megatron-LM's --lr-decay-style spells the schedules as shardplan does, WSD in capitals.
const char* decay_style(LrDecay d) {
  return d == LrDecay::wsd ? "WSD" : to_string(d);
}

// A share of the run in whole parts per 10,000, for the script's integer arithmetic.
long long per_ten_thousand(double fraction) {
  return std::llround(fraction * 10000);
}

// Known length: decay and WSD iterations as numbers, warm-up shortened if the run is shorter.
void known_length(MegatronArgs& a, const OptimizerSettings& o, long long steps, int warmup) {
  const long long decay = decay_steps(o, steps);
  long long w = warmup;
  if (w >= decay) {
    w = decay / 10;
    a.script().meta.notes.push_back(fmt::format(
        "the recipe's {} warm-up steps are not fewer than the {} decay steps of this run "
        "(Megatron asserts lr_warmup_steps < lr_decay_steps): warm-up shortened to {}",
        warmup, decay, w));
  }
  a.add("--lr-warmup-iters", w);
  if (o.decay_end_fraction < 1) a.add("--lr-decay-iters", decay);
  if (o.decay == LrDecay::wsd) {
    const long long wsd =
        std::clamp(std::llround(static_cast<double>(steps) * o.wsd_decay_fraction), 1LL, decay - w);
    a.add("--lr-wsd-decay-iters", wsd);
  }
}

// Unknown length (TRAIN_ITERS set at launch): the script derives the decay iterations and
// refuses to start when the run is shorter than the warm-up.
void length_at_launch(MegatronArgs& a, const OptimizerSettings& o, int warmup) {
  MegatronScript& s = a.script();
  a.add("--lr-warmup-iters", warmup);
  std::string decay = "TRAIN_ITERS";
  if (o.decay_end_fraction < 1) {
    s.variables.push_back({"LR_DECAY_ITERS", fmt::format("$(( TRAIN_ITERS * {} / 10000 ))",
                                                         per_ten_thousand(o.decay_end_fraction))});
    a.shell("--lr-decay-iters", "LR_DECAY_ITERS");
    decay = "LR_DECAY_ITERS";
  }
  if (o.decay == LrDecay::wsd) {
    s.variables.push_back(
        {"LR_WSD_DECAY_ITERS", fmt::format("$(( TRAIN_ITERS * {} / 10000 + 1 ))",
                                           per_ten_thousand(o.wsd_decay_fraction))});
    a.shell("--lr-wsd-decay-iters", "LR_WSD_DECAY_ITERS");
  }
  s.checks.push_back(fmt::format(
      "[ \"${0}\" -gt {1} ] || {{ echo \"{0} (${0}) must exceed the {1} warm-up iterations "
      "(Megatron asserts lr_warmup_steps < lr_decay_steps)\" >&2; exit 2; }}",
      decay, warmup));
}

void provenance(MegatronScript& s, const OptimizerSettings& o, int warmup) {
  std::string given;
  for (const auto& g : o.given) given += (given.empty() ? "" : ", ") + g;
  const std::string from = given.empty() ? o.recipe : fmt::format("{} over {}", given, o.recipe);
  s.meta.provenance.push_back(
      {"--lr / --min-lr", fmt::format("{:g} / {:g}", o.lr, o.min_lr), from});
  s.meta.provenance.push_back(
      {"schedule",
       fmt::format("{} warm-up steps, {} decay{}", warmup, to_string(o.decay),
                   o.decay_end_fraction < 1
                       ? fmt::format(" ending at {:.0f}% of the run", o.decay_end_fraction * 100)
                       : ""),
       from});
  s.meta.provenance.push_back({"--weight-decay / --clip-grad / Adam betas, eps",
                               fmt::format("{:g} / {:g} / {:g}, {:g}, {:g}", o.weight_decay,
                                           o.clip_grad, o.beta1, o.beta2, o.eps),
                               from});
  for (const auto& n : o.notes) s.meta.notes.push_back(n);
}

}  // namespace

void megatron_optimizer_args(MegatronArgs& a, const EmitInputs& in) {
  const OptimizerSettings o = optimizer_of(in);
  const int warmup = warmup_steps_at(o, in.training);
  a.add("--lr", megatron_number(o.lr)).add("--min-lr", megatron_number(o.min_lr));
  if (const auto steps = train_steps(in)) {
    known_length(a, o, *steps, warmup);
  } else {
    length_at_launch(a, o, warmup);
  }
  a.add("--lr-decay-style", decay_style(o.decay));
  if (o.decay == LrDecay::wsd) a.add("--lr-wsd-decay-style", "cosine");
  a.add("--weight-decay", megatron_number(o.weight_decay))
      .add("--clip-grad", megatron_number(o.clip_grad));
  if (in.training.optimizer == OptimizerKind::adamw) {
    a.add("--adam-beta1", megatron_number(o.beta1))
        .add("--adam-beta2", megatron_number(o.beta2))
        .add("--adam-eps", megatron_number(o.eps));
  }
  provenance(a.script(), o, warmup);
}

}  // namespace shardplan::emit
