// The inputs as JSON: every key carries its unit; key names are the stable contract of --json.
#include "shardplan/json_out.hpp"

#include <cmath>

#include "model_json.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {

nlohmann::json to_json(const ModelSpec& m) {
  const ParamCounts c = count_params(m);
  nlohmann::json j = {{"name", m.name}, {"source", m.source}, {"params", c.total}};
  if (!m.has_architecture()) return j;
  j.update({{"active_params", c.active},
            {"layers", m.layers},
            {"hidden", m.hidden},
            {"heads", m.heads},
            {"kv_heads", m.kv_heads},
            {"head_dim", m.head_dim},
            {"ffn_hidden", m.ffn_hidden},
            {"vocab", m.vocab},
            {"mlp", to_string(m.mlp)},
            {"norm", to_string(m.norm)},
            {"positions", to_string(m.positions)},
            {"max_positions", m.max_positions},
            {"default_seq_len", m.seq_len},
            {"tied_embeddings", m.tied_embeddings},
            {"qkv_bias", m.qkv_bias},
            {"out_bias", m.out_bias},
            {"mlp_bias", m.mlp_bias},
            {"dropout", m.dropout},
            {"experts", m.experts},
            {"experts_per_token", m.experts_per_token}});
  write_extended_architecture(m, j);
  return j;
}

nlohmann::json link_json(const LinkSpec& l) {
  return {{"name", l.name},
          {"bytes_per_s", l.bytes_per_s},
          {"busbw_bytes_per_s", l.busbw_bytes_per_s},
          {"latency_s", l.latency_s},
          {"measured", l.measured},
          {"user_given", l.user_given},
          {"source", l.source}};
}

nlohmann::json to_json(const ClusterSpec& c) {
  nlohmann::json j = {{"name", c.name},
                      {"source", c.source},
                      {"gpu",
                       {{"name", c.gpu.name},
                        {"memory_bytes", c.gpu.memory_bytes},
                        {"peak_bf16_flops", c.gpu.peak_flops[static_cast<int>(MathDtype::bf16)]},
                        {"hbm_bytes_per_s", c.gpu.hbm_bytes_per_s},
                        {"calibrated", c.gpu.calibrated},
                        {"source", c.gpu.source}}},
                      {"gpus", c.gpus},
                      {"gpus_per_node", c.gpus_per_node},
                      {"nodes", c.nodes()},
                      {"gpus_per_domain", c.domain_gpus()},
                      {"domains", c.domains()},
                      {"intra", link_json(c.intra)},
                      {"nic", link_json(c.nic)},
                      {"nics_per_node", c.nics_per_node},
                      {"inter_per_gpu", link_json(c.inter)}};
  // Only a cluster whose profile gives its host side (offload).
  if (c.host.known()) {
    j["host"] = {{"memory_bytes", c.host.memory_bytes},
                 {"link", c.host.link_name},
                 {"link_bytes_per_s", c.host.link_bytes_per_s},
                 {"dram_bytes_per_s", c.host.dram_bytes_per_s},
                 {"dram_efficiency", c.host.dram_efficiency},
                 {"nvme_bytes_per_s", c.host.nvme_bytes_per_s},
                 {"source", c.host.source}};
    // A probe's figures, which offload pricing uses in place of the datasheet's.
    if (c.host.measured_h2d_bytes_per_s > 0)
      j["host"]["measured_h2d_bytes_per_s"] = c.host.measured_h2d_bytes_per_s;
    if (c.host.measured_d2h_bytes_per_s > 0)
      j["host"]["measured_d2h_bytes_per_s"] = c.host.measured_d2h_bytes_per_s;
    if (c.host.measured_dram_bytes_per_s > 0)
      j["host"]["measured_dram_bytes_per_s"] = c.host.measured_dram_bytes_per_s;
  }
  return j;
}

nlohmann::json to_json(const TrainingSpec& t) {
  nlohmann::json j = {{"precision", to_string(t.precision)},
                      {"precision_recipe", t.recipe.name},  // what fp8 resolved to
                      {"optimizer", to_string(t.optimizer)},
                      {"attention", to_string(t.attention)},
                      {"seq_len", t.seq_len},
                      {"global_batch", t.global_batch},
                      {"fp32_grads", t.fp32_grads},
                      {"overlap_grad_reduce", t.overlap_grad_reduce},
                      {"overlap_param_gather", t.overlap_param_gather},
                      {"tp_comm_overlap", t.tp_comm_overlap},
                      {"fragmentation", t.fragmentation}};
  j["framework"] = t.framework.name.empty() ? "none" : t.framework.name;
  if (t.tokens > 0) j["tokens"] = t.tokens;
  if (t.gpu_hour_cost > 0) j["gpu_hour_cost"] = t.gpu_hour_cost;
  if (t.moe_capacity_factor > 0) j["moe_capacity_factor"] = t.moe_capacity_factor;
  if (t.moe_max_load > 0) j["moe_max_load"] = t.moe_max_load;
  if (t.moe_fp8_dispatch) j["moe_fp8_dispatch"] = true;
  if (t.moe_dispatcher != MoeDispatcher::alltoall) j["moe_dispatcher"] = to_string(t.moe_dispatcher);
  if (t.grad_sync != GradSync::framework) j["grad_sync"] = to_string(t.grad_sync);
  return j;
}

nlohmann::json to_json(const ParallelPlan& p) {
  nlohmann::json j = {
      {"dp", p.dp},
      {"tp", p.tp},
      {"pp", p.pp},
      {"cp", p.cp},
      {"ep", p.ep},
      {"zero", p.zero},
      {"micro_batch", p.micro_batch},
      {"recompute", to_string(p.recompute)},
      {"sequence_parallel", p.sequence_parallel},
      {"interleave", p.interleave},
      {"schedule", schedule_name(p)},
      {"first_stage_layers",
       p.first_stage_layers >= 0 ? nlohmann::json(p.first_stage_layers) : nlohmann::json()},
      {"last_stage_layers",
       p.last_stage_layers >= 0 ? nlohmann::json(p.last_stage_layers) : nlohmann::json()},
      {"gpus", p.gpus()},
      {"summary", describe(p)}};
  // Only a plan that sets expert tensor parallelism apart from tp (Megatron-Core's default).
  if (p.etp > 0) j["expert_tp"] = p.etp;
  // Only a hybrid-sharded plan (HSDP): ZeRO's shard group, and the replicas of each shard.
  if (p.dp_shard > 0) {
    j["dp_shard"] = p.dp_shard;
    j["dp_replicate"] = p.dp_replicate();
  }
  // Only a plan that hides its expert all-to-alls behind paired passes.
  if (p.moe_a2a_overlap) j["moe_a2a_overlap"] = true;
  // Only a plan that offloads.
  if (p.offload.any()) {
    j["offload"] = {{"optimizer", p.offload.optimizer},
                    {"params", p.offload.params},
                    {"activations", p.offload.activations},
                    {"to", to_string(p.offload.to)}};
    // Only a plan that offloads layers' activations (Megatron-Core --cpu-offloading-num-layers).
    if (p.offload.activation_layers > 0) j["offload"]["activation_layers"] = p.offload.activation_layers;
  }
  return j;
}

}  // namespace shardplan
