// emit's optimizer flags over the model family's published recipe (src/launch/recipe.cpp).
#include "emit_options.hpp"

#include <fmt/format.h>

#include "shardplan/error.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {

void add_optimizer_options(CLI::App& app, OptimizerFlags& f) {
  const char* group = "Optimizer";
  app.add_option("--lr", f.lr, "Peak learning rate (default: the model family's published recipe)")
      ->group(group);
  app.add_option("--min-lr", f.min_lr,
                 "Final learning rate (default: the recipe's share of the peak)")
      ->group(group);
  app.add_option("--warmup-steps", f.warmup_steps, "Linear warm-up steps (default: the recipe's)")
      ->group(group);
  app.add_option("--lr-decay", f.lr_decay,
                 "cosine | linear | constant | wsd (default: the recipe's)")
      ->group(group);
  app.add_option("--weight-decay", f.weight_decay, "AdamW weight decay (default: the recipe's)")
      ->group(group);
  app.add_option("--clip-grad", f.clip_grad,
                 "Gradient clipping norm, 0 = off (default: the recipe's)")
      ->group(group);
  app.add_option("--adam-betas", f.adam_betas, "B1,B2 (default: the recipe's, e.g. 0.9,0.95)")
      ->group(group);
  app.add_option("--adam-eps", f.adam_eps, "Adam epsilon (default: the recipe's)")->group(group);
}

namespace {

double at_least_zero(const std::string& text, const std::string& flag) {
  const double v = parse_number(text, flag);
  if (v < 0) throw InputError(flag, fmt::format("'{}' is negative; give a value >= 0", text));
  return v;
}

double beta(const std::string& text, const std::string& flag) {
  const double v = parse_number(text, flag);
  if (v < 0 || v >= 1)
    throw InputError(flag, fmt::format("beta '{}' is outside [0, 1) (torch.optim.AdamW)", text));
  return v;
}

void set_betas(const std::string& text, OptimizerSettings& o) {
  const size_t comma = text.find(',');
  if (comma == std::string::npos)
    throw InputError("--adam-betas", "'" + text + "' is not B1,B2 (for example 0.9,0.95)");
  o.beta1 = beta(text.substr(0, comma), "--adam-betas");
  o.beta2 = beta(text.substr(comma + 1), "--adam-betas");
}

}  // namespace

OptimizerSettings resolve_optimizer(const OptimizerFlags& f, const ModelSpec& model) {
  OptimizerSettings o = published_recipe(model);
  const double min_share = o.lr > 0 ? o.min_lr / o.lr : 0;
  if (!f.lr.empty()) {
    o.lr = parse_number(f.lr, "--lr");
    if (o.lr <= 0) throw InputError("--lr", "'" + f.lr + "' is not a positive learning rate");
    o.min_lr = o.lr * min_share;
    o.given.push_back("--lr " + f.lr);
  }
  if (!f.min_lr.empty()) {
    o.min_lr = at_least_zero(f.min_lr, "--min-lr");
    o.given.push_back("--min-lr " + f.min_lr);
  }
  // Megatron-LM asserts min_lr <= lr (validate_args; OptimizerParamScheduler).
  if (o.min_lr > o.lr) {
    throw InputError("--min-lr", fmt::format("{:g} is above the peak learning rate {:g}; give "
                                             "--min-lr <= --lr",
                                             o.min_lr, o.lr));
  }
  if (!f.warmup_steps.empty()) {
    o.warmup_steps =
        static_cast<int>(std::min(at_least_zero(f.warmup_steps, "--warmup-steps"), 1e9));
    o.warmup_tokens = 0;
    o.given.push_back("--warmup-steps " + f.warmup_steps);
  }
  if (!f.lr_decay.empty()) {
    o.decay = parse_lr_decay(f.lr_decay, "--lr-decay");
    if (o.decay == LrDecay::wsd && o.wsd_decay_fraction <= 0) o.wsd_decay_fraction = 0.2;
    if (o.decay != LrDecay::wsd) o.wsd_decay_fraction = 0;
    o.given.push_back("--lr-decay " + f.lr_decay);
  }
  if (!f.weight_decay.empty()) {
    o.weight_decay = at_least_zero(f.weight_decay, "--weight-decay");
    o.given.push_back("--weight-decay " + f.weight_decay);
  }
  if (!f.clip_grad.empty()) {
    o.clip_grad = at_least_zero(f.clip_grad, "--clip-grad");
    o.given.push_back("--clip-grad " + f.clip_grad);
  }
  if (!f.adam_betas.empty()) {
    set_betas(f.adam_betas, o);
    o.given.push_back("--adam-betas " + f.adam_betas);
  }
  if (!f.adam_eps.empty()) {
    o.eps = parse_number(f.adam_eps, "--adam-eps");
    if (o.eps <= 0)
      throw InputError("--adam-eps", "'" + f.adam_eps + "' is not a positive epsilon");
    o.given.push_back("--adam-eps " + f.adam_eps);
  }
  return o;
}

}  // namespace shardplan::cli
