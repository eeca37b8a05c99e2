// Strict reconstruction of ModelSpec, ClusterSpec, TrainingSpec and ParallelPlan from the JSON
// the renderers write (json_out.cpp): every key of those objects is read or is an error. The
// plan, training, link and host objects are read by the rows that write them (spec_fields.cpp).
#include "shardplan/plan_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "json_reader.hpp"
#include "model_json.hpp"
#include "shardplan/error.hpp"
#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/schedule.hpp"
#include "spec_fields.hpp"

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
  read_fields(link_fields(), o, l);
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
    read_fields(host_fields(), h, c.host);
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

}  // namespace

TrainingSpec training_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  TrainingSpec t;
  read_fields(training_fields(), o, t);
  o.finish();
  return t;
}

ParallelPlan plan_from_json(const nlohmann::json& j, const std::string& where) {
  StrictObject o(j, where);
  ParallelPlan p;
  read_fields(plan_fields(), o, p);
  o.finish();
  return p;
}

namespace {

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

PlanPick parse_plan_pick(const std::string& text, const std::string& field) {
  if (text.empty() || text == "recommended") return PlanPick::recommended();
  if (text == "fastest") return PlanPick::fastest();
  const bool digits = text.size() <= 6 && std::all_of(text.begin(), text.end(),
                                                      [](char c) { return c >= '0' && c <= '9'; });
  if (digits && std::stoi(text) >= 1) return PlanPick::ranked(std::stoi(text));
  throw InputError(field, "'" + text +
                              "' is not a choice; use recommended, fastest, or a rank in the "
                              "file's ranked list (1 = the fastest, as `plan` lists them)");
}

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
  using Kind = PlanPick::Kind;
  if (j.contains("plan")) {
    if (pick.kind != Kind::recommended) {
      throw InputError(
          "--pick",
          origin + " holds one plan (estimate --json); --pick chooses in a `plan --json` file");
    }
    f.where = origin;
  } else if (pick.kind == Kind::ranked) {
    if (!j.contains("ranked") || !j.at("ranked").is_array())
      throw InputError(origin + ": ranked", "missing; write the file with `shardplan plan --json`");
    const auto& ranked = j.at("ranked");
    if (pick.rank > static_cast<int>(ranked.size())) {
      throw InputError("--pick", fmt::format("{} ranks {} plans; pick 1 to {} (plan --top N "
                                             "--json keeps more)",
                                             origin, ranked.size(), ranked.size()));
    }
    chosen = &ranked.at(static_cast<size_t>(pick.rank - 1));
    f.where = fmt::format("{}: ranked #{}", origin, pick.rank);
    if (!chosen->is_object() || !chosen->contains("plan"))
      throw InputError(f.where + ".plan", "missing");
  } else {
    const char* key = pick.kind == Kind::fastest ? "fastest" : "recommended";
    if (j.contains(key) && j.at(key).is_null()) {
      throw InputError(origin + ": " + key,
                       pick.kind == Kind::fastest
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
  f.training = training_from_json(j.at("training"), origin + ": training");
  const std::string plan_where = chosen == &j ? origin + ": plan" : f.where + ".plan";
  f.plan = plan_from_json(chosen->at("plan"), plan_where);
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
