// The model in pretrain_gpt.py's terms: shapes, norm, activation, positions (RoPE base and
// scaling), the MoE router and dispatcher, MLA. Flag names from megatron/training/arguments.py
// (_add_network_size_args, _add_moe_args, _add_mla_args) and the TransformerConfig /
// MLATransformerConfig fields it turns into flags
// (megatron/core/transformer/transformer_config.py), NVIDIA/Megatron-LM commit d98e8a64 (core
// 0.20).
#include <fmt/format.h>

#include <cmath>

#include "megatron_args.hpp"

namespace shardplan::emit {
namespace {

// Megatron-LM's fixed Llama 3 scaling (rotary_pos_embedding.py RotaryEmbedding._apply_scaling:
// low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192; only the factor
// is a flag, --rope-scaling-factor).
constexpr double kMegatronLlama3LowFreq = 1;
constexpr double kMegatronLlama3HighFreq = 4;
constexpr int kMegatronLlama3Original = 8192;
// MLATransformerConfig's YaRN fields without a flag: original_max_position_embeddings 4096,
// beta_fast 32, beta_slow 1 (transformer_config.py).
constexpr int kMlaYarnOriginal = 4096;
constexpr double kMlaYarnBetaFast = 32;
constexpr double kMlaYarnBetaSlow = 1;

bool integral(double v) {
  return v == std::floor(v) && std::fabs(v) < 2e9;
}

// --rotary-base is an int flag (default 10000); the scaling as the launcher spells it.
void rope_args(MegatronArgs& a, const ModelSpec& m) {
  const RopeSpec& r = m.rope;
  if (r.theta > 0) a.add("--rotary-base", static_cast<long long>(std::llround(r.theta)));
  switch (r.scaling) {
    case RopeScaling::none:
      // MLA defaults to YaRN (MLATransformerConfig.rope_type = "yarn"): say plain RoPE.
      if (m.is_mla()) a.add("--rope-type", "rope");
      break;
    case RopeScaling::llama3:
      a.add("--use-rope-scaling").add("--rope-scaling-factor", megatron_number(r.factor));
      break;
    case RopeScaling::linear:
      a.add("--rotary-seq-len-interpolation-factor",
            static_cast<long long>(std::llround(r.factor)));
      break;
    case RopeScaling::yarn:
      if (m.is_mla()) {
        a.add("--rope-type", "yarn");
      } else {
        a.add("--yarn-original-max-position-embeddings", r.original_positions)
            .add("--yarn-beta-fast", megatron_number(r.beta_fast))
            .add("--yarn-beta-slow", megatron_number(r.beta_slow));
      }
      a.add("--rotary-scaling-factor", megatron_number(r.factor))
          .add("--mscale", megatron_number(r.mscale > 0 ? r.mscale : 1.0))
          .add("--mscale-all-dim", megatron_number(r.mscale_all_dim));
      break;
  }
}

// Router: score function, top-k weight scaling, group-limited routing, load-balancing loss,
// expert bias (DeepSeek-V3's auxiliary-loss-free balancing needs sigmoid scores:
// TransformerConfig.__post_init__), and the all-to-all dispatcher shardplan priced.
void router_args(MegatronArgs& a, const EmitInputs& in) {
  const ModelSpec& m = in.model;
  const RouterSpec& r = m.router;
  a.add("--moe-router-score-function", to_string(r.score));
  // topk 1 with softmax after top-k has no gradient (__post_init__ asks for pre-softmax).
  if (m.experts_per_token == 1 && r.score == RouterScore::softmax)
    a.add("--moe-router-pre-softmax");
  if (r.topk_scale > 0) a.add("--moe-router-topk-scaling-factor", megatron_number(r.topk_scale));
  if (r.groups > 0 && r.group_topk > 0) {
    a.add("--moe-router-num-groups", r.groups).add("--moe-router-group-topk", r.group_topk);
  }
  if (r.aux_loss_coeff > 0) {
    a.add("--moe-router-load-balancing-type", r.sequence_aux_loss ? "seq_aux_loss" : "aux_loss")
        .add("--moe-aux-loss-coeff", megatron_number(r.aux_loss_coeff));
  } else {
    a.add("--moe-router-load-balancing-type", "none");
  }
  if (m.router_bias) {
    // The bias update speed gamma = 0.001 (DeepSeek-V3 report Sec. 4.2; Megatron's default too).
    a.add("--moe-router-enable-expert-bias").add("--moe-router-bias-update-rate", "0.001");
  }
}

// Blackwell (B200, GB200, B300, GB300): MXFP8 tensor cores, the only FP8 wire format Megatron-Core's
// dispatch has (TransformerConfig.moe_dispatch_fwd_dtype 'mxfp8').
bool mxfp8_gpu(const EmitInputs& in) {
  const std::string& g = in.cluster.gpu.name;
  return g.rfind('B', 0) == 0 || g.rfind("GB", 0) == 0;
}

// The dispatcher shardplan priced (all-to-alls; default allgather), and the kernels the
// Megatron-Core MoE guide lists for performance (megatron/core/transformer/moe/README.md:
// "--moe-grouped-gemm --moe-permute-fusion"; EP all-to-all overlap "--overlap-moe-expert-
// parallel-comm --delay-wgrad-compute"; "--moe-shared-expert-overlap"). Constraints:
// TransformerConfig.__post_init__ (shared-expert overlap needs alltoall or flex and is off under
// the EP overlap; mxfp8 dispatch needs flex with the ncclep backend, the TE op fuser and grouped
// GEMMs; delay_wgrad_compute needs the EP overlap).
void dispatcher_args(MegatronArgs& a, const EmitInputs& in) {
  if (in.training.moe_fp8_dispatch) {
    a.add("--moe-token-dispatcher-type", "flex")
        .add("--moe-flex-dispatcher-backend", "ncclep")
        .add("--moe-dispatch-fwd-dtype", "mxfp8")
        .add("--use-transformer-engine-op-fuser");
  } else if (in.training.moe_dispatcher == MoeDispatcher::deepep) {
    // DeepEP's kernels, priced as one copy per token and remote node (docs/moe.md).
    a.add("--moe-token-dispatcher-type", "flex").add("--moe-flex-dispatcher-backend", "deepep");
  } else {
    a.add("--moe-token-dispatcher-type", "alltoall");
  }
  a.add("--moe-grouped-gemm").add("--moe-permute-fusion");
  if (in.plan.moe_a2a_overlap) {
    a.add("--overlap-moe-expert-parallel-comm").add("--delay-wgrad-compute");
  } else if (in.model.shared_ffn_hidden > 0 &&
             (recomputed_modules(in.plan) & bit(RecomputeModule::shared_experts)) == 0) {
    // Megatron-Core refuses it beside the shared_experts recompute module.
    a.add("--moe-shared-expert-overlap");
  }
}

// Megatron-Core MoE flags: routed expert width, shared experts, which layers are MoE (a Python
// list expression, 1 = MoE), expert tp, capacity, the router and the multi-token prediction.
void moe_args(MegatronArgs& a, const EmitInputs& in) {
  const ModelSpec& m = in.model;
  a.add("--num-experts", m.experts).add("--moe-router-topk", m.experts_per_token);
  a.add("--moe-ffn-hidden-size", m.ffn_hidden);
  if (m.shared_ffn_hidden > 0) a.add("--moe-shared-expert-intermediate-size", m.shared_ffn_hidden);
  if (m.first_dense_layers > 0 || m.moe_layer_step > 1) {
    std::string pattern = "[";
    for (int i = 0; i < m.layers; ++i) {
      if (i > 0) pattern += ',';
      pattern += m.is_moe_layer(i) ? '1' : '0';
    }
    a.add("--moe-layer-freq", pattern + "]");
  }
  if (in.plan.etp > 0) a.add("--expert-tensor-parallel-size", in.plan.etp);
  if (in.training.moe_capacity_factor > 0) {
    // Tokens past capacity dropped by lowest router probability (Megatron's default "probs"),
    // the rest padded to capacity: the c x even share shardplan priced.
    a.add("--moe-expert-capacity-factor", fmt::format("{:g}", in.training.moe_capacity_factor))
        .add("--moe-token-drop-policy", "probs")
        .add("--moe-pad-expert-input-to-capacity");
  }
  router_args(a, in);
  dispatcher_args(a, in);
}

void attention_args(MegatronArgs& a, const ModelSpec& m) {
  if (m.is_mla()) {
    // Megatron-Core MLA: --qk-head-dim is the no-rope part, --qk-pos-emb-head-dim the rope part.
    a.add("--multi-latent-attention").add("--kv-lora-rank", m.mla.kv_lora_rank);
    if (m.mla.q_lora_rank > 0) a.add("--q-lora-rank", m.mla.q_lora_rank);
    a.add("--qk-head-dim", m.mla.qk_nope_head_dim)
        .add("--qk-pos-emb-head-dim", m.mla.qk_rope_head_dim)
        .add("--v-head-dim", m.mla.v_head_dim);
  }
  if (m.qk_norm) a.add("--qk-layernorm");
}

}  // namespace

void megatron_model_args(MegatronArgs& a, const EmitInputs& in) {
  const ModelSpec& m = in.model;
  a.add("--num-layers", m.layers)
      .add("--hidden-size", m.hidden)
      .add("--num-attention-heads", m.heads);
  a.add("--ffn-hidden-size", m.is_moe() ? m.dense_mlp_width() : m.ffn_hidden);
  if (m.kv_heads != m.heads) a.add("--group-query-attention").add("--num-query-groups", m.kv_heads);
  if (m.head_dim * m.heads != m.hidden) a.add("--kv-channels", m.head_dim);
  a.add("--seq-length", in.training.seq_len)
      .add("--max-position-embeddings", std::max(m.max_positions, in.training.seq_len));
  if (m.mlp == MlpKind::swiglu && m.activation_clamp > 0) {
    // gpt-oss's clamped gate: x * sigmoid(1.702 x) times (up + 1), gate and up clamped
    // (modeling_gpt_oss.py GptOssExperts), which Megatron-LM's gpt-oss example writes as
    // --quick-geglu --glu-linear-offset 1.0 --activation-func-clamp-value (TransformerConfig).
    a.add("--quick-geglu").add("--glu-linear-offset", "1.0");
    a.add("--activation-func-clamp-value", megatron_number(m.activation_clamp));
  } else if (m.mlp == MlpKind::swiglu) {
    a.add("--swiglu");
  }
  // megatron/training/arguments.py --squared-relu (Nemotron-4's activation).
  if (m.mlp == MlpKind::squared_relu) a.add("--squared-relu");
  a.add("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
  // LayerNorm1P (Nemotron-4): TransformerConfig.layernorm_zero_centered_gamma.
  if (m.norm_zero_centered) a.add("--apply-layernorm-1p");
  if (m.norm_epsilon > 0) a.add("--norm-epsilon", megatron_number(m.norm_epsilon));
  const bool yarn = m.rope.scaling == RopeScaling::yarn && !m.is_mla();
  a.add("--position-embedding-type", m.positions == PositionKind::none     ? "none"
                                     : m.positions != PositionKind::rotary ? "learned_absolute"
                                     : yarn                                ? "yarn"
                                                                           : "rope");
  if (m.positions == PositionKind::rotary) rope_args(a, m);
  if (m.positions == PositionKind::rotary && m.rope.fraction < 1)
    a.add("--rotary-percent", megatron_number(m.rope.fraction));
  // Sliding-window attention (arguments.py --window-size, --window-attn-skip-freq: one full
  // attention layer after N - 1 windowed ones); attention sinks as gpt-oss's learnable softmax
  // offset (TransformerConfig.softmax_type 'learnable').
  if (m.sliding_window > 0) {
    a.add("--window-size", fmt::format("{},0", m.sliding_window));
    if (m.global_attention_every > 0) a.add("--window-attn-skip-freq", m.global_attention_every);
  }
  if (m.attention_sinks) a.add("--softmax-type", "learnable");
  if (!m.tied_embeddings) a.add("--untie-embeddings-and-output-weights");
  if (!(m.qkv_bias && m.out_bias && m.mlp_bias)) {
    a.add("--disable-bias-linear");
    if (m.qkv_bias) a.add("--add-qkv-bias");
  }
  if (!m.dropout) a.add("--attention-dropout", "0").add("--hidden-dropout", "0");
  if (m.is_moe()) moe_args(a, in);
  if (m.mtp_layers > 0) {
    a.add("--mtp-num-layers", m.mtp_layers);
    const OptimizerSettings o = optimizer_of(in);
    if (o.mtp_loss_scale > 0) a.add("--mtp-loss-scaling-factor", megatron_number(o.mtp_loss_scale));
  }
  attention_args(a, m);
  a.add("--attention-backend", in.training.attention == AttentionKind::flash ? "flash" : "unfused");
}

namespace {

// What TransformerConfig.__post_init__ asserts for --overlap-moe-expert-parallel-comm (expert
// parallelism, no full recompute, virtual stages under a pipeline, at most one MTP layer, bf16 or
// fp16 weights) and the one FP8 dispatch it has (mxfp8, Blackwell).
void moe_problems(std::vector<PlanProblem>& out, const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const char* overlap = "Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm)";
  if (p.moe_a2a_overlap) {
    if (!in.model.is_moe() || p.ep == 1)
      out.push_back({"--ep", fmt::format("{} needs expert parallelism (ep > 1)", overlap)});
    if (p.recompute == Recompute::full)
      out.push_back({"--recompute", fmt::format("{} runs without full recompute; use selective "
                                                "or none",
                                                overlap)});
    if (p.pp > 1 && p.interleave < 2)
      out.push_back({"--interleave", fmt::format("{} under a pipeline needs 2 or more virtual "
                                                 "stages per rank",
                                                 overlap)});
    if (in.model.mtp_layers > 1)
      out.push_back({"--model", fmt::format("{} supports at most one MTP layer; the model has {}",
                                            overlap, in.model.mtp_layers)});
    if (in.training.precision == Precision::fp32)
      out.push_back({"--precision", fmt::format("{} needs bf16 or fp16 weights", overlap)});
  }
  if (in.training.moe_fp8_dispatch && !mxfp8_gpu(in)) {
    out.push_back({"--moe-fp8-dispatch",
                   fmt::format("Megatron-Core dispatches in FP8 only as MXFP8 (flex dispatcher, "
                               "ncclep backend: TransformerConfig.moe_dispatch_fwd_dtype), which "
                               "needs Blackwell tensor cores; the {} has none: dispatch in bf16",
                               in.cluster.gpu.name)});
  }
}

void rope_problems(std::vector<PlanProblem>& out, const ModelSpec& m) {
  const RopeSpec& r = m.rope;
  if (m.positions != PositionKind::rotary) return;
  if (r.theta > 0 && !integral(r.theta)) {
    out.push_back({"--model", fmt::format("Megatron-LM's --rotary-base is an integer; rope_theta "
                                          "{:g} is not",
                                          r.theta)});
  }
  if (r.scaling == RopeScaling::llama3 &&
      ((r.low_freq_factor > 0 && r.low_freq_factor != kMegatronLlama3LowFreq) ||
       (r.high_freq_factor > 0 && r.high_freq_factor != kMegatronLlama3HighFreq) ||
       (r.original_positions > 0 && r.original_positions != kMegatronLlama3Original))) {
    out.push_back(
        {"--model", fmt::format("Megatron-LM's --use-rope-scaling fixes low_freq_factor 1, "
                                "high_freq_factor 4 and original_max_position_embeddings 8192; "
                                "this model has {:g}, {:g} and {}",
                                r.low_freq_factor, r.high_freq_factor, r.original_positions)});
  }
  if (r.scaling == RopeScaling::linear && !integral(r.factor)) {
    out.push_back({"--model", fmt::format("Megatron-LM's --rotary-seq-len-interpolation-factor is "
                                          "an integer; the linear RoPE factor {:g} is not",
                                          r.factor)});
  }
  if (r.scaling == RopeScaling::yarn && m.is_mla() &&
      ((r.original_positions > 0 && r.original_positions != kMlaYarnOriginal) ||
       (r.beta_fast > 0 && r.beta_fast != kMlaYarnBetaFast) ||
       (r.beta_slow > 0 && r.beta_slow != kMlaYarnBetaSlow))) {
    out.push_back({"--model",
                   "Megatron-LM's MLA YaRN has no flags for original_max_position_embeddings, "
                   "beta_fast and beta_slow (fixed at 4096, 32 and 1)"});
  }
}

}  // namespace

std::vector<PlanProblem> megatron_model_problems(const EmitInputs& in) {
  std::vector<PlanProblem> out;
  rope_problems(out, in.model);
  moe_problems(out, in);
  return out;
}

std::string megatron_number(double v) {
  return fmt::format("{:g}", v);
}

}  // namespace shardplan::emit
