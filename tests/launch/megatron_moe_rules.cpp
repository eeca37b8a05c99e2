// The Megatron-LM rules for mixture-of-experts execution (megatron_rule_parts.hpp): the EP
// all-to-all overlap, the flex dispatcher and FP8 dispatch, capacity, and the MoE guide's kernels,
// transcribed from TransformerConfig.__post_init__ (megatron/core/transformer/transformer_config.py)
// and megatron/core/transformer/moe/README.md at NVIDIA/Megatron-LM commit d98e8a64; and the
// same __post_init__'s checks of layer CPU offloading (cpu_offloading_rule).
#include <string>

#include "megatron_rule_parts.hpp"

namespace shardplan::test::rules {

namespace {

// Whether `word` is one of the space-separated words of an nargs='*' argument ("moe" is not
// "moe_act": Megatron checks membership in the list).
bool listed(const std::string& words, const std::string& word) {
  size_t from = 0;
  while (from <= words.size()) {
    size_t to = words.find(' ', from);
    if (to == std::string::npos) to = words.size();
    if (words.compare(from, to - from, word) == 0) return true;
    from = to + 1;
  }
  return false;
}

}  // namespace

// TransformerConfig.__post_init__ for --overlap-moe-expert-parallel-comm, and
// --delay-wgrad-compute, which needs it.
std::string moe_overlap_rule(const L& l, const ModelSpec&) {
  if (has(l, "--delay-wgrad-compute") && !has(l, "--overlap-moe-expert-parallel-comm"))
    return "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute";
  if (!has(l, "--overlap-moe-expert-parallel-comm")) return "";
  if (whole(l, "--pipeline-model-parallel-size", 1) > 1) {
    long long vpp = whole(l, "--num-virtual-stages-per-pipeline-rank", 1);
    if (has(l, "--pipeline-model-parallel-layout"))
      vpp = static_cast<long long>(layout_stages(str(l, "--pipeline-model-parallel-layout")).size()) /
            whole(l, "--pipeline-model-parallel-size", 1);
    if (vpp < 2 && !has(l, "--num-layers-per-virtual-pipeline-stage"))
      return "If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified "
             "when pipeline_model_parallel_size > 1";
  }
  if (whole(l, "--expert-model-parallel-size", 1) <= 1)
    return "overlap_moe_expert_parallel_comm is only supported with expert model parallelism";
  const std::string d = str(l, "--moe-token-dispatcher-type", "allgather");
  if (d != "alltoall" && d != "flex")
    return "overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher";
  if (str(l, "--recompute-granularity") == "full" || has(l, "--recompute-method") ||
      has(l, "--recompute-num-layers"))
    return "disable full recomputation (and the recompute method) when enabling "
           "overlap_moe_expert_parallel_comm";
  if (listed(str(l, "--recompute-modules"), "moe"))
    return "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm";
  if (!has(l, "--bf16") && !has(l, "--fp16"))
    return "overlap_moe_expert_parallel_comm is only supported with bf16 or fp16 model";
  if (has(l, "--moe-shared-expert-overlap"))
    return "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm";
  return fail_if(whole(l, "--mtp-num-layers", 0) > 1,
                 "MTP supports at most one layer when enabling overlap_moe_expert_parallel_comm.");
}

// TransformerConfig.__post_init__: the flex dispatcher's backends, the MXFP8 dispatch, the shared
// expert overlap's dispatcher.
std::string moe_dispatch_rule(const L& l, const ModelSpec&) {
  const std::string d = str(l, "--moe-token-dispatcher-type", "allgather");
  const std::string backend = str(l, "--moe-flex-dispatcher-backend", "deepep");
  if (d != "allgather" && d != "alltoall" && d != "flex") return "no dispatcher " + d;
  if (has(l, "--moe-enable-deepep") && d != "flex")
    return "DeepEP backend is only supported with flex token dispatcher.";
  if (d == "flex" && backend == "deepep" && has(l, "--moe-pad-expert-input-to-capacity"))
    return "Flex token dispatcher with deepep backend does not support "
           "moe_pad_expert_input_to_capacity";
  if (backend == "ncclep" && d != "flex")
    return "moe_flex_dispatcher_backend='ncclep' requires moe_token_dispatcher_type='flex'.";
  if (str(l, "--moe-dispatch-fwd-dtype", "bf16") != "bf16") {
    if (d != "flex" || backend != "ncclep")
      return "moe_dispatch_fwd_dtype / moe_combine_bwd_dtype require the 'ncclep' flex "
             "dispatcher backend.";
    if (!has(l, "--use-transformer-engine-op-fuser") || !has(l, "--moe-grouped-gemm"))
      return "moe_dispatch_fwd_dtype = 'mxfp8' requires use_transformer_engine_op_fuser and "
             "moe_grouped_gemm";
  }
  return fail_if(has(l, "--moe-shared-expert-overlap") && d != "alltoall" && d != "flex",
                 "moe_shared_expert_overlap only works with alltoall or flex token dispatcher.");
}

// TransformerConfig.__post_init__: capacity works with aux_loss, seq_aux_loss, global_aux_loss
// or none balancing; the drop policy is probs or position (Literal).
std::string moe_capacity_rule(const L& l, const ModelSpec&) {
  const std::string policy = str(l, "--moe-token-drop-policy", "probs");
  if (policy != "probs" && policy != "position") return "--moe-token-drop-policy " + policy;
  if (!has(l, "--moe-expert-capacity-factor")) return "";
  const std::string b = str(l, "--moe-router-load-balancing-type", "aux_loss");
  return fail_if(b != "aux_loss" && b != "seq_aux_loss" && b != "global_aux_loss" && b != "none",
                 "moe_expert_capacity_factor only works with aux_loss, seq_aux_loss, "
                 "global_aux_loss or none load balancing");
}

// The Megatron-Core MoE guide's kernels on every MoE launch (README.md "Enable kernel fusions":
// --moe-grouped-gemm, --moe-permute-fusion), the config's balancing loss, and no MoE flag on a
// dense model.
std::string moe_recipe_rule(const L& l, const ModelSpec& m) {
  if (!m.is_moe()) {
    for (const auto& [flag, value] : l.args)
      if (flag.rfind("--moe-", 0) == 0 || flag == "--overlap-moe-expert-parallel-comm" ||
          flag == "--expert-tensor-parallel-size" || flag == "--num-experts")
        return flag + " on a dense model";
    return "";
  }
  if (!has(l, "--moe-grouped-gemm") || !has(l, "--moe-permute-fusion"))
    return "no --moe-grouped-gemm / --moe-permute-fusion";
  const RouterSpec& r = m.router;
  const std::string want =
      r.aux_loss_coeff > 0 ? (r.sequence_aux_loss ? "seq_aux_loss" : "aux_loss") : "none";
  if (str(l, "--moe-router-load-balancing-type", "aux_loss") != want)
    return "--moe-router-load-balancing-type is not " + want;
  if (r.aux_loss_coeff > 0 && num(l, "--moe-aux-loss-coeff", 0) != r.aux_loss_coeff)
    return "--moe-aux-loss-coeff is not the config's";
  return fail_if(r.groups > 0 && whole(l, "--moe-router-num-groups", 0) != r.groups,
                 "--moe-router-num-groups is not n_group");
}

// TransformerConfig.__post_init__ for --cpu-offloading: cpu_offloading_num_layers in
// [0, num_layers), no pipeline parallelism, no recompute.
std::string cpu_offloading_rule(const L& l, const ModelSpec& m) {
  if (!has(l, "--cpu-offloading")) return "";
  const long long layers = whole(l, "--num-layers", m.layers);
  const long long n = whole(l, "--cpu-offloading-num-layers", 0);
  if (n < 0 || n >= layers)
    return "CPU offloading can be done only for layers less than " + std::to_string(layers);
  if (whole(l, "--pipeline-model-parallel-size", 1) > 1)
    return "Currently there is no support for Pipeline parallelism with CPU offloading";
  return fail_if(has(l, "--recompute-granularity") || has(l, "--recompute-activations"),
                 "CPU offloading does not work when activation recomputation is enabled");
}

}  // namespace shardplan::test::rules
