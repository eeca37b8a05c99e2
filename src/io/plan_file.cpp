// Strict reconstruction of ModelSpec, ClusterSpec, TrainingSpec and ParallelPlan from the JSON
// the renderers write (json_out.cpp): every key of those objects is read or is an error.
#include "shardplan/plan_file.hpp"

#include <fmt/format.h>

#include <cmath>

#include "json_reader.hpp"
#include "model_json.hpp"
#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/rule_words.hpp"

namespace shardplan {
namespace {

bool same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

ModelSpec read_model(StrictObject o) {
  ModelSpec m;
  m.name = o.string("name");
  m.source = o.string("source");
  const double params = o.positive("params");
  if (!o.has("layers")) {
    m.params_only = params;
    o.finish();
    return m;
  }
  o.positive("active_params");
  m.layers = o.integer("layers");
  m.hidden = o.integer("hidden");
  m.heads = o.integer("heads");
  m.kv_heads = o.integer("kv_heads");
  m.head_dim = o.integer("head_dim");
  m.ffn_hidden = o.integer("ffn_hidden");
  m.vocab = o.integer("vocab");
  m.mlp = parse_mlp(o.string("mlp"), o.field("mlp"));
  m.norm = parse_norm(o.string("norm"), o.field("norm"));
  m.positions = parse_positions(o.string("positions"), o.field("positions"));
  m.max_positions = o.integer("max_positions");
  // "seq_len" is the name schema version 1 wrote.
  m.seq_len = o.has("seq_len") ? o.integer("seq_len") : o.integer("default_seq_len");
  m.tied_embeddings = o.boolean("tied_embeddings");
  m.qkv_bias = o.boolean("qkv_bias");
  m.out_bias = o.boolean("out_bias");
  m.mlp_bias = o.boolean("mlp_bias");
  m.dropout = o.boolean("dropout");
  m.experts = o.integer("experts");
  m.experts_per_token = o.integer("experts_per_token");
  read_extended_architecture(o, m);
  o.finish();
  check_architecture(m, o.where());
  const double counted = count_params(m).total;
  if (!same(counted, params)) {
    throw InputError(o.field("params"),
                     fmt::format("{:.0f} does not match the architecture's {:.0f} parameters; "
                                 "the file was edited or written by another version",
                                 params, counted));
  }
  return m;
}

LinkSpec read_link(StrictObject o) {
  LinkSpec l;
  l.name = o.string("name");
  l.bytes_per_s = o.positive("bytes_per_s");
  l.busbw_bytes_per_s = o.positive("busbw_bytes_per_s");
  l.latency_s = o.number("latency_s");
  l.measured = o.boolean("measured");
  l.user_given = o.boolean("user_given");
  l.source = o.string("source");
  o.finish();
  return l;
}

ClusterSpec read_cluster(StrictObject o) {
  ClusterSpec c;
  c.name = o.string("name");
  c.source = o.string_or("source", o.where());
  StrictObject g = o.object("gpu");
  const std::string gpu_name = g.string("name");
  g.string("source");  // the profile is loaded again below, by name or from the probe's file
  // A probe-calibrated GPU lives in the cluster profile the probe wrote; a preset by its name.
  c.gpu = g.boolean("calibrated") ? load_cluster(c.source, o.field("source")).gpu
                                  : load_gpu(gpu_name, g.field("name"));
  if (!same(g.number("memory_bytes"), c.gpu.memory_bytes)) {
    throw InputError(g.field("memory_bytes"),
                     fmt::format("differs from {}'s {:.0f} bytes in {}", c.gpu.name,
                                 c.gpu.memory_bytes, c.gpu.source));
  }
  if (!same(g.number("peak_bf16_flops"), c.gpu.peak_flops[static_cast<int>(MathDtype::bf16)])) {
    throw InputError(g.field("peak_bf16_flops"),
                     fmt::format("differs from {}'s profile {}", c.gpu.name, c.gpu.source));
  }
  g.number("hbm_bytes_per_s");
  g.finish();
  c.gpus = o.integer("gpus");
  c.gpus_per_node = o.integer("gpus_per_node");
  if (c.gpus < 1 || c.gpus_per_node < 1 || c.gpus_per_node > c.gpus) {
    throw InputError(
        o.field("gpus_per_node"),
        fmt::format("{} GPUs per node of {} GPUs is not a cluster", c.gpus_per_node, c.gpus));
  }
  if (o.integer("nodes") != c.nodes())
    throw InputError(o.field("nodes"), fmt::format("should be {}", c.nodes()));
  // Plan files written before the scale-up domain was its own tier: the domain is the node.
  c.gpus_per_domain = o.has("gpus_per_domain") ? o.integer("gpus_per_domain") : c.gpus_per_node;
  if (c.gpus_per_domain < c.gpus_per_node || c.gpus_per_domain % c.gpus_per_node != 0) {
    throw InputError(o.field("gpus_per_domain"),
                     fmt::format("{} is not a whole number of {}-GPU nodes", c.gpus_per_domain,
                                 c.gpus_per_node));
  }
  if (o.has("domains") && o.integer("domains") != c.domains())
    throw InputError(o.field("domains"), fmt::format("should be {}", c.domains()));
  c.intra = read_link(o.object("intra"));
  c.nic = read_link(o.object("nic"));
  c.nics_per_node = o.integer("nics_per_node");
  // Written only when the cluster's profile gives its host side (offload).
  if (o.has("host")) {
    StrictObject h = o.object("host");
    c.host.memory_bytes = h.positive("memory_bytes");
    c.host.link_name = h.string_or("link", "");
    c.host.link_bytes_per_s = h.positive("link_bytes_per_s");
    c.host.dram_bytes_per_s = h.positive("dram_bytes_per_s");
    c.host.dram_efficiency = h.positive("dram_efficiency");
    c.host.nvme_bytes_per_s = h.number("nvme_bytes_per_s");
    c.host.source = h.string("source");
    c.host.measured_h2d_bytes_per_s = h.number_or("measured_h2d_bytes_per_s", 0);
    c.host.measured_d2h_bytes_per_s = h.number_or("measured_d2h_bytes_per_s", 0);
    c.host.measured_dram_bytes_per_s = h.number_or("measured_dram_bytes_per_s", 0);
    h.finish();
  }
  if (c.nics_per_node < 1) throw InputError(o.field("nics_per_node"), "must be at least 1");
  share_nics(c);
  const LinkSpec inter = read_link(o.object("inter_per_gpu"));
  if (!same(inter.busbw_bytes_per_s, c.inter.busbw_bytes_per_s)) {
    throw InputError(o.field("inter_per_gpu"),
                     "is not the NIC's bandwidth shared by the node's GPUs");
  }
  o.finish();
  return c;
}

TrainingSpec read_training(StrictObject o) {
  TrainingSpec t;
  const Precision precision = parse_precision(o.string("precision"), o.field("precision"));
  t.optimizer = parse_optimizer(o.string("optimizer"), o.field("optimizer"));
  t.attention = parse_attention(o.string("attention"), o.field("attention"));
  t.seq_len = o.integer("seq_len");
  t.global_batch = o.integer("global_batch");
  if (t.seq_len < 1 || t.global_batch < 1)
    throw InputError(o.field("global_batch"), "seq_len and global_batch must be >= 1");
  t.fp32_grads = o.boolean("fp32_grads");
  t.overlap_grad_reduce = o.boolean("overlap_grad_reduce");
  t.overlap_param_gather = o.boolean("overlap_param_gather");
  t.tp_comm_overlap = o.boolean("tp_comm_overlap");
  t.fragmentation = o.number("fragmentation");
  if (!(t.fragmentation >= 0 && t.fragmentation <= 1))
    throw InputError(o.field("fragmentation"), "must be between 0 and 1");
  // Files written before --framework existed carry none: the ideal stack priced them.
  const std::string framework = o.string_or("framework", "none");
  if (framework != "none")
    t.framework = load_framework(parse_framework(framework, o.field("framework")));
  set_precision(t, precision);
  // The recipe the file was priced with: the same one, unless the framework's default moved.
  const std::string recipe = o.string_or("precision_recipe", t.recipe.name);
  if (recipe != t.recipe.name) {
    throw InputError(o.field("precision_recipe"),
                     fmt::format("'{}' was priced, but {} resolves to {} now; give --precision {}",
                                 recipe, to_string(precision), t.recipe.name, recipe));
  }
  if (o.has("tokens")) t.tokens = o.positive("tokens");
  if (o.has("gpu_hour_cost")) t.gpu_hour_cost = o.positive("gpu_hour_cost");
  if (o.has("moe_capacity_factor")) t.moe_capacity_factor = o.positive("moe_capacity_factor");
  if (o.has("grad_sync")) t.grad_sync = parse_grad_sync(o.string("grad_sync"), o.field("grad_sync"));
  o.finish();
  return t;
}

ParallelPlan read_plan(StrictObject o) {
  ParallelPlan p;
  p.dp = o.integer("dp");
  p.tp = o.integer("tp");
  p.pp = o.integer("pp");
  p.cp = o.integer("cp");
  p.ep = o.integer("ep");
  // Written only when the plan sets expert tensor parallelism apart from tp.
  if (o.has("expert_tp")) p.etp = o.integer("expert_tp");
  // Written only for a hybrid-sharded plan; dp_replicate follows from dp and dp_shard.
  if (o.has("dp_shard")) p.dp_shard = o.integer("dp_shard");
  if (o.has("dp_replicate")) (void)o.integer("dp_replicate");
  // Written only when the plan hides its expert all-to-alls.
  if (o.has("moe_a2a_overlap")) p.moe_a2a_overlap = o.boolean("moe_a2a_overlap");
  p.zero = o.integer("zero");
  p.micro_batch = o.integer("micro_batch");
  p.recompute = parse_recompute(o.string("recompute"), o.field("recompute"));
  p.sequence_parallel = o.boolean("sequence_parallel");
  p.interleave = o.integer("interleave");
  // Plans written before schedules and layouts were planned carry neither.
  if (o.has("schedule")) {
    p.schedule = parse_schedule(o.string("schedule"), o.field("schedule"));
  } else {
    p.schedule = schedule_of(p);
  }
  // Absent or null: an even split.
  p.first_stage_layers = o.integer_or("first_stage_layers", -1);
  p.last_stage_layers = o.integer_or("last_stage_layers", -1);
  // Written only when the plan offloads.
  if (o.has("offload")) {
    StrictObject off = o.object("offload");
    p.offload.optimizer = off.boolean("optimizer");
    p.offload.params = off.boolean("params");
    p.offload.activations = off.boolean("activations");
    p.offload.to = parse_offload_target(off.string("to"), off.field("to"));
    // Written only when the plan offloads layers' activations.
    p.offload.activation_layers = off.integer_or("activation_layers", 0);
    if (p.offload.activation_layers < 0) {
      throw InputError(off.field("activation_layers"),
                       fmt::format("{} is not a layer count; give 1 or more layers (or leave "
                                   "it out: none)",
                                   p.offload.activation_layers));
    }
    off.finish();
  }
  if (o.integer("gpus") != p.gpus()) {
    throw InputError(o.field("gpus"), fmt::format("should be dp x tp x pp x cp = {}", p.gpus()));
  }
  o.string("summary");
  o.finish();
  return p;
}

double step_time(const nlohmann::json& parent, const std::string& where) {
  if (!parent.contains("time")) return 0;
  const auto& time = parent.at("time");
  if (!time.is_object() || !time.contains("step_s") || !time.at("step_s").is_number() ||
      !(time.at("step_s").get<double>() > 0)) {
    throw InputError(where + ": time.step_s", "must be a positive number of seconds");
  }
  return time.at("step_s").get<double>();
}

}  // namespace

PlanFile read_plan_file(const std::string& text, const std::string& origin, PlanPick pick) {
  const nlohmann::json j = parse_json(text, origin);
  if (!j.is_object())
    throw InputError(origin, "a plan file is a JSON object (from `shardplan estimate --json`)");
  for (const char* key : {"model", "cluster", "training"}) {
    if (!j.contains(key)) {
      throw InputError(origin + ": " + key,
                       "missing; write the file with `shardplan estimate --json` or `plan --json`");
    }
  }
  PlanFile f;
  const nlohmann::json* chosen = &j;
  if (j.contains("plan")) {
    if (pick == PlanPick::fastest) {
      throw InputError(
          "--pick",
          origin + " holds one plan (estimate --json); --pick chooses in a `plan --json` file");
    }
    f.where = origin;
  } else {
    const char* key = pick == PlanPick::fastest ? "fastest" : "recommended";
    if (j.contains(key) && j.at(key).is_null()) {
      throw InputError(origin + ": " + key,
                       pick == PlanPick::fastest
                           ? "is null: the search found no plan that fits"
                           : "is null: no rung of the ladder fits; --pick fastest, or re-plan");
    }
    if (!j.contains(key) || !j.at(key).is_object()) {
      throw InputError(origin + ": " + key,
                       "missing; expected \"plan\" (estimate --json) or \"recommended\" and "
                       "\"fastest\" (plan --json)");
    }
    chosen = &j.at(key);
    f.where = origin + ": " + key;
    if (!chosen->contains("plan")) throw InputError(f.where + ".plan", "missing");
  }
  f.model = read_model(StrictObject(j.at("model"), origin + ": model"));
  f.cluster = read_cluster(StrictObject(j.at("cluster"), origin + ": cluster"));
  f.training = read_training(StrictObject(j.at("training"), origin + ": training"));
  const std::string plan_where = chosen == &j ? origin + ": plan" : f.where + ".plan";
  f.plan = read_plan(StrictObject(chosen->at("plan"), plan_where));
  f.step_s = step_time(*chosen, f.where);
  if (f.plan.gpus() != f.cluster.gpus) {
    throw InputError(
        plan_where + ": gpus",
        fmt::format("the plan uses {} GPUs but the cluster has {}", f.plan.gpus(), f.cluster.gpus));
  }
  PlanRules rules;
  rules.allow_tp_across_nodes = true;  // the plan was made with whatever the user allowed
  require_runnable(f.plan, {f.model, f.training, f.cluster, rules}, plan_where);
  return f;
}

}  // namespace shardplan
