// The inputs as JSON: every key carries its unit; key names are the stable contract of --json.
#include "shardplan/json_out.hpp"

#include "model_json.hpp"
#include "spec_fields.hpp"
#include "shardplan/model.hpp"

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

nlohmann::json link_json(const LinkSpec& l) { return write_fields(link_fields(), l); }

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
  if (c.host.known()) j["host"] = write_fields(host_fields(), c.host);
  return j;
}

nlohmann::json to_json(const TrainingSpec& t) { return write_fields(training_fields(), t); }

nlohmann::json to_json(const ParallelPlan& p) { return write_fields(plan_fields(), p); }

}  // namespace shardplan
