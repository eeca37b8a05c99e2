// The rule table of megatron_rules.hpp. Each rule cites the Megatron-LM file and function whose
// assert or raise it transcribes (commit d98e8a64), or, for the model rules, the config.json
// field and the Megatron flag default the script must override.
#include "megatron_rules.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "megatron_rule_parts.hpp"
#include "support.hpp"

namespace shardplan::test {
namespace rules {

std::vector<std::string> layout_stages(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  const std::regex group(R"(\(([^)]+)\)\*(\d+))"), one(R"((.)\*(\d+))");
  for (const std::regex* r : {&group, &one}) {
    std::smatch m;
    while (std::regex_search(s, m, *r)) {
      std::string rep;
      for (int i = 0; i < std::stoi(m[2]); ++i) rep += m[1];
      s = m.prefix().str() + rep + m.suffix().str();
    }
  }
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '|') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace rules

namespace {

using namespace rules;

int model_parallel(const L& l) {
  return static_cast<int>(whole(l, "--tensor-model-parallel-size", 1) *
                          whole(l, "--pipeline-model-parallel-size", 1) *
                          whole(l, "--context-parallel-size", 1));
}

std::string layout_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--pipeline-model-parallel-layout")) return "";
  const auto stages = layout_stages(str(l, "--pipeline-model-parallel-layout"));
  const long long pp = whole(l, "--pipeline-model-parallel-size", 1);
  std::string flat;
  for (const auto& s : stages) flat += s;
  const auto count = [&](char c) { return std::count(flat.begin(), flat.end(), c); };
  if (static_cast<long long>(stages.size()) % pp != 0)
    return fmt::format("{} stages do not divide over pp {}", stages.size(), pp);
  if (flat.empty() || flat.front() != 'E' || flat.back() != 'L' || count('E') != 1 ||
      count('L') != 1)
    return "the layout must start with one E and end with one L";
  if (count('t') != whole(l, "--num-layers", 0))
    return fmt::format("{} t in the layout for --num-layers {}", count('t'),
                       whole(l, "--num-layers", 0));
  if (count('m') != whole(l, "--mtp-num-layers", 0))
    return fmt::format("{} m in the layout for --mtp-num-layers {}", count('m'),
                       whole(l, "--mtp-num-layers", 0));
  const size_t first_m = flat.find('m');
  if (first_m != std::string::npos && flat.find('t', first_m) != std::string::npos)
    return "decoder layers must be placed before MTP layers";
  return "";
}

std::string divisible_layers_rule(const L& l, const ModelSpec&) {
  const bool other = has(l, "--pipeline-model-parallel-layout") ||
                     has(l, "--decoder-first-pipeline-num-layers") ||
                     has(l, "--decoder-last-pipeline-num-layers");
  if (other) return "";
  long long layers = whole(l, "--num-layers", 0);
  if (has(l, "--account-for-embedding-in-pipeline-split")) ++layers;
  if (has(l, "--account-for-loss-in-pipeline-split")) ++layers;
  const long long pp = whole(l, "--pipeline-model-parallel-size", 1) *
                       whole(l, "--num-virtual-stages-per-pipeline-rank", 1);
  return fail_if(layers % pp != 0,
                 fmt::format("Number of layers should be divisible by the pipeline-model-parallel "
                             "size ({} layers, {} stages)",
                             layers, pp));
}

std::string first_last_rule(const L& l, const ModelSpec&) {
  const bool first = has(l, "--decoder-first-pipeline-num-layers");
  const bool last = has(l, "--decoder-last-pipeline-num-layers");
  if (!first && !last) return "";
  if (has(l, "--account-for-embedding-in-pipeline-split") ||
      has(l, "--account-for-loss-in-pipeline-split") || has(l, "--pipeline-model-parallel-layout"))
    return "first/last stage layers cannot be set with account-for-* or a layout";
  long long layers = whole(l, "--num-layers", 0);
  long long middle = whole(l, "--pipeline-model-parallel-size", 1);
  for (const char* f :
       {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"}) {
    if (!has(l, f)) continue;
    if (whole(l, f, 0) <= 0) return std::string(f) + " must be larger than 0";
    layers -= whole(l, f, 0);
    --middle;
  }
  if ((layers > 0) != (middle > 0)) return "middle layers without middle stages (or the reverse)";
  return fail_if(middle > 0 && layers % middle != 0,
                 "middle layers must divide over the middle pipeline ranks");
}

std::string lr_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--lr"))
    return "no --lr: its default is None and OptimizerParamScheduler does float(max_lr)";
  return fail_if(num(l, "--min-lr", 0) > num(l, "--lr", 0), "min_lr must be <= lr");
}

std::string warmup_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--train-iters")) return "";
  const long long decay = whole(l, "--lr-decay-iters", whole(l, "--train-iters", 0));
  const long long warmup = whole(l, "--lr-warmup-iters", 0);
  if (decay <= 0) return "lr_decay_steps must be > 0";
  return fail_if(warmup >= decay,
                 fmt::format("lr_warmup_steps {} must be < lr_decay_steps {}", warmup, decay));
}

std::string wsd_rule(const L& l, const ModelSpec&) {
  if (str(l, "--lr-decay-style", "linear") != "WSD") return "";
  if (!has(l, "--lr-wsd-decay-iters")) return "WSD needs wsd_decay_steps (--lr-wsd-decay-iters)";
  const long long decay = whole(l, "--lr-decay-iters", whole(l, "--train-iters", 0));
  const long long wsd = whole(l, "--lr-wsd-decay-iters", 0);
  return fail_if(wsd <= 0 || wsd > decay - whole(l, "--lr-warmup-iters", 0),
                 "the WSD decay must fit between the warm-up and lr_decay_iters");
}

std::string batch_rule(const L& l, const ModelSpec&) {
  const int mp = model_parallel(l);
  if (mp <= 0 || l.world_size % mp != 0)
    return fmt::format("world size ({}) is not divisible by total_model_size ({})", l.world_size,
                       mp);
  const long long dp = l.world_size / mp;
  const long long micro = whole(l, "--micro-batch-size", 0);
  const long long global = whole(l, "--global-batch-size", micro * dp);
  return fail_if(micro <= 0 || global % (micro * dp) != 0,
                 fmt::format("global batch size ({}) is not divisible by micro batch size ({}) "
                             "times data parallel size ({})",
                             global, micro, dp));
}

std::string router_bias_rule(const L& l, const ModelSpec&) {
  const std::string score = str(l, "--moe-router-score-function", "softmax");
  return fail_if(
      has(l, "--moe-router-enable-expert-bias") && score != "sigmoid" && score != "sqrtsoftplus",
      "Expert bias for aux-loss-free routing only supports 'sigmoid' and "
      "'sqrtsoftplus' score functions");
}

std::string topk1_rule(const L& l, const ModelSpec&) {
  return fail_if(has(l, "--num-experts") && whole(l, "--moe-router-topk", 2) == 1 &&
                     str(l, "--moe-router-score-function", "softmax") == "softmax" &&
                     !has(l, "--moe-router-pre-softmax") &&
                     str(l, "--moe-router-load-balancing-type", "aux_loss") != "sinkhorn",
                 "Please use --moe-router-pre-softmax when topk is 1.");
}

std::string group_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--moe-router-group-topk")) return "";
  if (!has(l, "--moe-router-num-groups"))
    return "When using group limited routing, moe_router_num_groups must be specified.";
  const long long groups = whole(l, "--moe-router-num-groups", 1);
  return fail_if(
      whole(l, "--num-experts", 0) % groups != 0 || whole(l, "--moe-router-group-topk", 0) > groups,
      "num_moe_experts % moe_router_num_groups == 0 and group_topk <= num_groups");
}

std::string overlap_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--overlap-param-gather")) return "";
  if (!has(l, "--use-distributed-optimizer") && !has(l, "--use-megatron-fsdp"))
    return "--overlap-param-gather only supported with distributed optimizer, megatron fsdp";
  return fail_if(!has(l, "--overlap-grad-reduce"),
                 "Must use --overlap-param-gather with --overlap-grad-reduce");
}

std::string fsdp_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--use-megatron-fsdp")) return "";
  if (l.cuda_device_max_connections == "1")
    return "FSDP requires CUDA_DEVICE_MAX_CONNECTIONS > 1 or unset.";
  return fail_if(str(l, "--ckpt-format", "torch_dist") != "fsdp_dtensor",
                 "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format.");
}

std::string shape_rule(const L& l, const ModelSpec&) {
  for (const char* f :
       {"--num-layers", "--hidden-size", "--num-attention-heads", "--max-position-embeddings"}) {
    if (!has(l, f)) return std::string(f) + " is required";
  }
  if (!has(l, "--kv-channels") &&
      whole(l, "--hidden-size", 0) % whole(l, "--num-attention-heads", 1) != 0)
    return "hidden_size % num_attention_heads == 0 without --kv-channels";
  if (whole(l, "--seq-length", 0) > whole(l, "--max-position-embeddings", 0))
    return "max_position_embeddings must be >= seq_length";
  const long long cp = whole(l, "--context-parallel-size", 1);
  return fail_if(cp > 1 && whole(l, "--seq-length", 0) % (2 * cp) != 0,
                 "seq-length should be a multiple of 2 * context-parallel-size");
}

std::string moe_rule(const L& l, const ModelSpec&) {
  if (whole(l, "--expert-model-parallel-size", 1) > 1 && !has(l, "--num-experts"))
    return "num_moe_experts must be non None to use expert-parallel.";
  if (has(l, "--moe-pad-expert-input-to-capacity") && !has(l, "--moe-expert-capacity-factor"))
    return "moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity";
  return fail_if(has(l, "--mtp-num-layers") &&
                     str(l, "--position-embedding-type", "learned_absolute") != "rope" &&
                     str(l, "--position-embedding-type", "") != "none",
                 "Multi-Token Prediction (MTP) is not supported with this position embedding");
}

std::string save_rule(const L& l, const ModelSpec&) {
  if (!has(l, "--save")) return "";
  return fail_if(whole(l, "--save-interval", 0) <= 0, "--save needs --save-interval > 0");
}

// ---- the model named (config.json field vs. the Megatron default the flag overrides) ----

std::string rope_base_rule(const L& l, const ModelSpec& m) {
  if (m.positions != PositionKind::rotary) return "";
  const double theta = m.rope.theta > 0 ? m.rope.theta : 10000;
  return fail_if(num(l, "--rotary-base", 10000) != theta,
                 fmt::format("--rotary-base {} (default 10000) is not rope_theta {:g}",
                             str(l, "--rotary-base", "unset"), theta));
}

std::string rope_scaling_rule(const L& l, const ModelSpec& m) {
  const bool llama3 = m.rope.scaling == RopeScaling::llama3;
  if (llama3 != has(l, "--use-rope-scaling"))
    return llama3 ? "rope_scaling llama3 without --use-rope-scaling"
                  : "--use-rope-scaling on a model without llama3 scaling";
  if (llama3 && num(l, "--rope-scaling-factor", 8) != m.rope.factor)
    return "--rope-scaling-factor is not the config's factor";
  if (m.is_mla()) {
    const bool yarn = m.rope.scaling == RopeScaling::yarn;
    // MLATransformerConfig.rope_type defaults to yarn; --rotary-scaling-factor to 1.
    if (str(l, "--rope-type", "yarn") != (yarn ? "yarn" : "rope"))
      return "MLA's rope type is not the config's";
    if (yarn && num(l, "--rotary-scaling-factor", 1) != m.rope.factor)
      return "--rotary-scaling-factor is not the config's YaRN factor";
  }
  return "";
}

std::string norm_rule(const L& l, const ModelSpec& m) {
  const std::string want = m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm";
  if (str(l, "--normalization", "LayerNorm") != want) return "--normalization is not " + want;
  const double eps = m.norm_epsilon > 0 ? m.norm_epsilon : 1e-5;
  return fail_if(std::fabs(num(l, "--norm-epsilon", 1e-5) - eps) > 1e-12,
                 fmt::format("--norm-epsilon {} (default 1e-5) is not the config's {:g}",
                             str(l, "--norm-epsilon", "unset"), eps));
}

std::string block_rule(const L& l, const ModelSpec& m) {
  // A gated SiLU MLP is --swiglu; gpt-oss's clamped one Megatron-LM's --quick-geglu.
  const bool gated = has(l, "--swiglu") || has(l, "--quick-geglu");
  if ((m.mlp == MlpKind::swiglu) != gated) return "--swiglu / --quick-geglu does not match the MLP";
  if ((m.activation_clamp > 0) != has(l, "--activation-func-clamp-value"))
    return "--activation-func-clamp-value does not match swiglu_limit";
  if (m.norm_zero_centered != has(l, "--apply-layernorm-1p"))
    return "--apply-layernorm-1p does not match LayerNorm1P";
  if (std::fabs(num(l, "--rotary-percent", 1.0) - m.rope.fraction) > 1e-9)
    return "--rotary-percent (default 1.0) is not partial_rotary_factor";
  if ((m.sliding_window > 0) != has(l, "--window-size"))
    return "--window-size does not match sliding_window";
  if (m.attention_sinks != (str(l, "--softmax-type", "vanilla") == "learnable"))
    return "--softmax-type learnable does not match the attention sinks";
  if (m.qk_norm != has(l, "--qk-layernorm")) return "--qk-layernorm does not match qk_norm";
  return fail_if(m.tied_embeddings == has(l, "--untie-embeddings-and-output-weights"),
                 "--untie-embeddings-and-output-weights does not match tie_word_embeddings");
}

std::string router_rule(const L& l, const ModelSpec& m) {
  if (!m.is_moe()) return "";
  if (str(l, "--moe-router-score-function", "softmax") != to_string(m.router.score))
    return fmt::format("--moe-router-score-function {} (default softmax) is not the config's {}",
                       str(l, "--moe-router-score-function", "unset"), to_string(m.router.score));
  if (m.router.topk_scale > 0 &&
      num(l, "--moe-router-topk-scaling-factor", 1) != m.router.topk_scale)
    return "--moe-router-topk-scaling-factor is not routed_scaling_factor";
  return fail_if(
      m.router.group_topk > 0 && whole(l, "--moe-router-group-topk", 0) != m.router.group_topk,
      "--moe-router-group-topk is not topk_group");
}

// shardplan priced the expert-parallel exchange as all-to-alls; Megatron's default dispatcher is
// allgather (TransformerConfig.moe_token_dispatcher_type = "allgather").
std::string dispatcher_rule(const L& l, const ModelSpec& m) {
  if (!m.is_moe() || whole(l, "--expert-model-parallel-size", 1) == 1) return "";
  const std::string d = str(l, "--moe-token-dispatcher-type", "allgather");
  return fail_if(d != "alltoall" && d != "flex",
                 "--moe-token-dispatcher-type " + d + ": shardplan priced all-to-alls");
}

}  // namespace

const std::vector<MegatronRule>& megatron_rules() {
  static const std::vector<MegatronRule> rules = {
      {"world-size",
       "arguments.py validate_args: world size divisible by total_model_size; "
       "core/num_microbatches_calculator.py: global batch divisible by micro x dp",
       batch_rule},
      {"shapes",
       "arguments.py validate_args: required_args, kv_channels, max_position_embeddings "
       ">= seq_length, seq-length multiple of 2 x cp",
       shape_rule},
      {"pp-divisible",
       "arguments.py validate_args: 'Number of layers should be divisible by the "
       "pipeline-model-parallel size'",
       divisible_layers_rule},
      {"pp-layout",
       "transformer/pipeline_parallel_layer_layout.py parse_str_to_list, "
       "validate_layer_layout; arguments.py: stages % pp == 0",
       layout_rule},
      {"pp-first-last",
       "transformer_config.py TransformerConfig.__post_init__ 'Uneven PP' and the "
       "layout / account-for-* conflicts",
       first_last_rule},
      {"lr",
       "arguments.py _add_learning_rate_args (--lr default None); "
       "core/optimizer_param_scheduler.py __init__: float(max_lr), max_lr >= min_lr",
       lr_rule},
      {"warmup",
       "core/optimizer_param_scheduler.py __init__: lr_decay_steps > 0, lr_warmup_steps "
       "< lr_decay_steps (training.py get_optimizer_param_scheduler)",
       warmup_rule},
      {"wsd", "core/optimizer_param_scheduler.py __init__: WSD asserts wsd_decay_steps; get_lr",
       wsd_rule},
      {"expert-bias",
       "transformer_config.py __post_init__: expert bias needs sigmoid or "
       "sqrtsoftplus",
       router_bias_rule},
      {"topk-1",
       "transformer_config.py __post_init__: 'Please use --moe-router-pre-softmax when "
       "topk is 1.'",
       topk1_rule},
      {"router-groups", "transformer_config.py __post_init__: group-limited routing", group_rule},
      {"moe",
       "transformer_config.py __post_init__ (EP needs experts, padding needs capacity); "
       "arguments.py validate_args (MTP needs rope)",
       moe_rule},
      {"overlap", "arguments.py validate_args: --overlap-param-gather", overlap_rule},
      {"megatron-fsdp",
       "arguments.py validate_args: Megatron-FSDP ckpt format and "
       "CUDA_DEVICE_MAX_CONNECTIONS",
       fsdp_rule},
      {"moe-overlap",
       "transformer_config.py __post_init__: overlap_moe_expert_parallel_comm (EP, alltoall or "
       "flex, no full recompute, VPP under PP, bf16/fp16, no shared-expert overlap, MTP <= 1) "
       "and delay_wgrad_compute",
       moe_overlap_rule},
      {"moe-dispatch",
       "transformer_config.py __post_init__: moe_enable_deepep / flex backends / "
       "moe_dispatch_fwd_dtype / moe_shared_expert_overlap",
       moe_dispatch_rule},
      {"moe-capacity",
       "transformer_config.py __post_init__: moe_expert_capacity_factor's load balancing; "
       "moe_token_drop_policy Literal['probs', 'position']",
       moe_capacity_rule},
      {"save", "arguments.py validate_args: --save needs --save-interval > 0", save_rule},
      {"rope-base", "config.json rope_theta vs arguments.py --rotary-base (int, default 10000)",
       rope_base_rule},
      {"rope-scaling",
       "config.json rope_scaling vs --use-rope-scaling / --rope-scaling-factor "
       "and MLATransformerConfig.rope_type (default yarn)",
       rope_scaling_rule},
      {"norm",
       "config.json rms_norm_eps vs --norm-epsilon (TransformerConfig.layernorm_epsilon "
       "default 1e-5) and --normalization",
       norm_rule},
      {"block",
       "config.json hidden_act / q_norm / tie_word_embeddings vs --swiglu, "
       "--qk-layernorm, --untie-embeddings-and-output-weights",
       block_rule},
      {"router",
       "config.json scoring_func / routed_scaling_factor / topk_group vs "
       "--moe-router-score-function (default softmax) and friends",
       router_rule},
      {"dispatcher",
       "TransformerConfig.moe_token_dispatcher_type default allgather; shardplan "
       "prices expert parallelism as all-to-alls",
       dispatcher_rule},
      {"moe-recipe",
       "core/transformer/moe/README.md (grouped GEMM, permute fusion); config.json "
       "router_aux_loss_coef / n_group vs --moe-aux-loss-coeff / --moe-router-num-groups",
       moe_recipe_rule},
      {"cpu-offloading", "transformer_config.py __post_init__: cpu_offloading", cpu_offloading_rule},
  };
  return rules;
}

std::vector<std::string> megatron_failures(const MegatronLaunch& launch, const ModelSpec& model) {
  std::vector<std::string> out;
  for (const MegatronRule& r : megatron_rules()) {
    const std::string why = r.check(launch, model);
    if (!why.empty()) out.push_back(std::string(r.id) + ": " + why);
  }
  return out;
}

}  // namespace shardplan::test
