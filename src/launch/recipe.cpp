// Published optimizer recipes: the learning rate, warm-up, decay, weight decay, clipping and Adam
// betas each model family was trained with, as its paper states them. Every emitted config sets
// them (Megatron-LM's --lr defaults to None and its OptimizerParamScheduler does float(max_lr), so
// a script without --lr stops at start-up).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "shardplan/emit.hpp"
#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/names.hpp"

namespace shardplan {

const char* to_string(LrDecay d) {
  switch (d) {
    case LrDecay::cosine:
      return "cosine";
    case LrDecay::linear:
      return "linear";
    case LrDecay::constant:
      return "constant";
    case LrDecay::wsd:
      return "wsd";
  }
  return "cosine";
}

LrDecay parse_lr_decay(const std::string& text, const std::string& field) {
  for (LrDecay d : {LrDecay::cosine, LrDecay::linear, LrDecay::constant, LrDecay::wsd}) {
    if (text == to_string(d)) return d;
  }
  throw InputError(field,
                   "'" + text + "' is not a decay style; use cosine, linear, constant or wsd");
}

namespace {

bool has(const std::string& name, const char* part) {
  return name.find(part) != std::string::npos;
}

// Touvron et al. 2023, "Llama 2", arXiv:2307.09288, Sec. 2.2: AdamW with beta1 0.9, beta2 0.95,
// eps 1e-5; cosine schedule with 2000 warm-up steps, decaying to 10% of the peak; weight decay
// 0.1; gradient clipping 1.0. Table 1: peak 3.0e-4 for 7B and 13B, 1.5e-4 for 34B and 70B.
OptimizerSettings llama2(double params) {
  OptimizerSettings o;
  o.lr = params < 20e9 ? 3.0e-4 : 1.5e-4;
  o.min_lr = o.lr * 0.1;
  o.warmup_steps = 2000;
  o.weight_decay = 0.1;
  o.clip_grad = 1.0;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-5;
  o.recipe = fmt::format(
      "Llama 2's recipe for {} (Touvron et al. 2023, arXiv:2307.09288, Sec. 2.2 and Table 1: "
      "AdamW 0.9/0.95, eps 1e-5, peak {:g}, 2000 warm-up steps, cosine to 10%, weight decay "
      "0.1, clip 1.0)",
      params < 20e9 ? "7B/13B" : "34B/70B", o.lr);
  return o;
}

// Brown et al. 2020, "Language Models are Few-Shot Learners", arXiv:2005.14165, Table 2.1 (peak
// learning rate per size) and Appendix B: Adam beta1 0.9, beta2 0.95, eps 1e-8; clip 1.0; linear
// warm-up over the first 375M tokens; cosine decay to 10% over 260B tokens, then 10% to the end
// of the 300B-token run; weight decay 0.1.
OptimizerSettings gpt3(double params) {
  struct Size {
    double params, lr;
    const char* name;
  };
  constexpr Size kSizes[] = {{125e6, 6.0e-4, "125M"}, {350e6, 3.0e-4, "350M"},
                             {760e6, 2.5e-4, "760M"}, {1.3e9, 2.0e-4, "1.3B"},
                             {2.7e9, 1.6e-4, "2.7B"}, {6.7e9, 1.2e-4, "6.7B"},
                             {13e9, 1.0e-4, "13B"},   {175e9, 0.6e-4, "175B"}};
  const Size* best = &kSizes[0];
  for (const Size& s : kSizes) {
    if (std::fabs(std::log(params / s.params)) < std::fabs(std::log(params / best->params)))
      best = &s;
  }
  OptimizerSettings o;
  o.lr = best->lr;
  o.min_lr = o.lr * 0.1;
  o.warmup_tokens = 375e6;
  o.decay_end_fraction = 260.0 / 300.0;
  o.weight_decay = 0.1;
  o.clip_grad = 1.0;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-8;
  o.recipe = fmt::format(
      "GPT-3 {}'s recipe (Brown et al. 2020, arXiv:2005.14165, Table 2.1 and Appendix B: Adam "
      "0.9/0.95, eps 1e-8, peak {:g}, warm-up over 375M tokens, cosine to 10% over 260B of 300B "
      "tokens, weight decay 0.1, clip 1.0)",
      best->name, o.lr);
  o.notes.push_back(
      "GPT-3 also grew the batch over its first 4-12B tokens (Appendix B); this config keeps the "
      "planned batch throughout");
  return o;
}

// Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.4.1: 405B with AdamW,
// peak 8e-5, 8,000 linear warm-up steps, cosine decay to 8e-7 over 1.2M steps. The paper gives no
// betas, eps, weight decay or clipping: Llama 2's (Sec. 2.2) are kept.
OptimizerSettings llama3_405b() {
  OptimizerSettings o = llama2(405e9);
  o.lr = 8e-5;
  o.min_lr = 8e-7;
  o.warmup_steps = 8000;
  o.recipe =
      "Llama 3 405B's recipe (Dubey et al. 2024, arXiv:2407.21783, Sec. 3.4.1: peak 8e-5, 8000 "
      "warm-up steps, cosine to 8e-7), with Llama 2's AdamW 0.9/0.95, eps 1e-5, weight decay 0.1 "
      "and clip 1.0 (Touvron et al. 2023, Sec. 2.2), which the Llama 3 paper does not restate";
  return o;
}

// DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, Sec. 4.2 (Hyper-
// Parameters): AdamW beta1 0.9, beta2 0.95, weight decay 0.1; the lr rises linearly to 2.2e-4
// over the first 2K steps, stays there until 10T tokens, then decays (cosine) to 2.2e-5 over
// 4.3T tokens, of a 14.8T-token run; gradient clipping 1.0; the MTP loss weight is 0.3 for the
// first 10T tokens. As shares of the run: decay ends at 14.3/14.8, the decay spans 4.3/14.8.
OptimizerSettings deepseek_v3() {
  OptimizerSettings o;
  o.lr = 2.2e-4;
  o.min_lr = 2.2e-5;
  o.warmup_steps = 2000;
  o.decay = LrDecay::wsd;
  o.decay_end_fraction = 14.3 / 14.8;
  o.wsd_decay_fraction = 4.3 / 14.8;
  o.weight_decay = 0.1;
  o.clip_grad = 1.0;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-8;  // not stated in the report: Megatron-LM's and PyTorch's AdamW default
  o.mtp_loss_scale = 0.3;
  o.recipe =
      "DeepSeek-V3's recipe (arXiv:2412.19437, Sec. 4.2: AdamW 0.9/0.95, weight decay 0.1, 2K "
      "warm-up steps to 2.2e-4, constant to 10T tokens, cosine to 2.2e-5 over the next 4.3T of "
      "14.8T, clip 1.0, MTP loss weight 0.3; eps not stated, 1e-8)";
  o.notes.push_back(
      "DeepSeek-V3 also ramped the batch from 3072 to 15360 sequences over the first 469B tokens, "
      "dropped the lr to 7.3e-6 for the last 167B tokens and the MTP weight to 0.1 after 10T "
      "(Sec. 4.2); this config keeps the planned batch, 2.2e-5 and 0.3 throughout");
  return o;
}

}  // namespace

OptimizerSettings published_recipe(const ModelSpec& m) {
  const std::string name = lowered(m.name);
  const double params = m.has_architecture() ? count_params(m).total : m.params_only;
  if (has(name, "deepseek-v3") || has(name, "deepseek_v3")) return deepseek_v3();
  if (has(name, "gpt3") || has(name, "gpt-3")) return gpt3(params);
  if (has(name, "llama-3") || has(name, "llama3")) {
    if (params > 300e9) return llama3_405b();
    OptimizerSettings o = llama2(params);
    o.recipe += "; the Llama 3 paper publishes only 405B's schedule";
    return o;
  }
  if (has(name, "llama-2") || has(name, "llama2")) return llama2(params);
  OptimizerSettings o = llama2(params);
  o.recipe = fmt::format("no recipe published for {}; {} (set --lr to choose)", m.name, o.recipe);
  return o;
}

long long decay_steps(const OptimizerSettings& o, long long steps) {
  return std::max(1LL, std::llround(static_cast<double>(steps) * o.decay_end_fraction));
}

int warmup_steps_at(const OptimizerSettings& o, const TrainingSpec& t) {
  if (o.warmup_tokens <= 0) return o.warmup_steps;
  const double tokens_per_step = static_cast<double>(t.global_batch) * t.seq_len;
  return std::max(1, static_cast<int>(std::ceil(o.warmup_tokens / tokens_per_step)));
}

OptimizerSettings optimizer_of(const EmitInputs& in) {
  return in.optimizer.lr > 0 ? in.optimizer : published_recipe(in.model);
}

}  // namespace shardplan
