// A torchtitan job config (TOML, v0.2.2's config/job_config.py) read back: [parallelism],
// [training], [activation_checkpoint] and [model] as planning flags.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <toml++/toml.h>
#include <utility>

#include "read_parts.hpp"
#include "shardplan/names.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan::config {
namespace {

// Keys of the sections that hold the plan; any other key of these sections is named.
const std::map<std::string, std::set<std::string>>& plan_sections() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_async_tensor_parallel",
        "pipeline_parallel_degree",
        "pipeline_parallel_split_points",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "context_parallel_degree",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree",
        "enable_compiled_autograd",
        "module_fqns_per_model_part",
        "fsdp_bucket_cap_mb"}},
      {"training",
       {"dataset", "dataset_path", "local_batch_size", "global_batch_size", "seq_len", "max_norm",
        "steps", "enable_cpu_offload", "mixed_precision_param", "mixed_precision_reduce", "compile",
        "gc_freq", "gc_debug", "seed", "deterministic", "dtype", "debug_moe_force_load_balance",
        // before v0.1 (early 2025): the degrees and the per-rank batch lived here
        "batch_size", "data_parallel_replicate_degree", "data_parallel_shard_degree",
        "tensor_parallel_degree", "warmup_steps", "enable_loss_parallel",
        "enable_async_tensor_parallel", "disable_loss_parallel"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop",
        "memory_budget", "visualize_memory_budget_pareto"}},
      {"model",
       {"name", "flavor", "tokenizer_path", "hf_assets_path", "converters",
        "print_after_conversion", "norm_type"}},
      {"compile", {"enable", "components", "backend"}},
  };
  return table;
}

// Sections that do not change memory or time as shardplan prices them.
const std::set<std::string>& other_sections() {
  static const std::set<std::string> table = {
      "job",        "profiling", "metrics", "optimizer",         "lr_scheduler",    "checkpoint",
      "float8",     "mx",        "comm",    "memory_estimation", "fault_tolerance", "experimental",
      "validation", "quantize",  "debug"};
  return table;
}

// The schedule row torchtitan names `name` with (torch.distributed.pipelining's class names, in
// the schedule table); nullptr when shardplan prices no such schedule.
const ScheduleRow* titan_schedule_row(const std::string& name) {
  for (const ScheduleRow& r : schedule_rows()) {
    if (name == r.torchtitan_class) return &r;
  }
  return nullptr;
}

// "1F1B, Interleaved1F1B, ...": the class names the table knows.
std::string titan_schedule_names() {
  return join_field(schedule_rows(), &ScheduleRow::torchtitan_class, ", ");
}

long long number(Builder& b, const toml::table& t, const std::string& section,
                 const std::string& key, long long fallback) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return fallback;
  if (!n->is_integer()) b.refuse(fmt::format("{}.{}", section, key), "is not a whole number");
  return n->as_integer()->get();
}

std::string text(const toml::table& t, const std::string& key) {
  const toml::node* n = t.get(key);
  return n && n->is_string() ? n->as_string()->get() : "";
}

void check_keys(const toml::table& root, Builder& b) {
  std::vector<std::string> plan_keys;
  for (const auto& [section, keys] : plan_sections())
    for (const std::string& k : keys) plan_keys.push_back(fmt::format("{}.{}", section, k));
  for (const auto& [name, node] : root) {
    const std::string section(name.str());
    if (other_sections().count(section)) continue;
    const auto it = plan_sections().find(section);
    if (it == plan_sections().end() || !node.is_table()) {
      b.unknown(section, {"parallelism", "training", "activation_checkpoint", "model"});
      continue;
    }
    for (const auto& [key, value] : *node.as_table()) {
      const std::string k(key.str());
      if (it->second.count(k) == 0) b.unknown(fmt::format("{}.{}", section, k), plan_keys);
    }
  }
}

// dp = replicate x shard; FSDP2's shard degree gives ZeRO-3, or ZeRO-2 when parameters stay
// gathered after forward ("never", or "default" under a pipeline: llama3/infra/parallelize.py).
void parallelism(const toml::table& p, Builder& b) {
  const std::string s = "parallelism";
  const long long replicate = number(b, p, s, "data_parallel_replicate_degree", 1);
  const long long shard = number(b, p, s, "data_parallel_shard_degree", -1);
  const long long tp = number(b, p, s, "tensor_parallel_degree", 1);
  const long long pp = number(b, p, s, "pipeline_parallel_degree", 1);
  const long long cp = number(b, p, s, "context_parallel_degree", 1);
  const long long ep = number(b, p, s, "expert_parallel_degree", 1);
  b.set("--tp", std::to_string(tp), s + ".tensor_parallel_degree");
  // llama3/infra/parallelize.py apply_tp: the norms and the residual stream run
  // SequenceParallel whenever tensor parallelism does.
  if (tp > 1) b.set("--sequence-parallel", "true", s + ".tensor_parallel_degree (torchtitan's TP)");
  // parallel_dims.loss_parallel_enabled: tp > 1 unless disable_loss_parallel; without it the
  // LM head's output is replicated (all-gathered) and cross_entropy runs on the whole vocabulary.
  if (tp > 1 && p["disable_loss_parallel"].value_or(false))
    b.set("--full-vocab-loss", "true", s + ".disable_loss_parallel");
  b.set("--pp", std::to_string(pp), s + ".pipeline_parallel_degree");
  b.set("--cp", std::to_string(cp), s + ".context_parallel_degree");
  b.set("--ep", std::to_string(ep), s + ".expert_parallel_degree");
  if (p.get("expert_tensor_parallel_degree")) {
    b.set("--expert-tp", std::to_string(number(b, p, s, "expert_tensor_parallel_degree", 1)),
          s + ".expert_tensor_parallel_degree");
  }
  // replicate > 1 with shard > 1: HSDP, FSDP2 on the (dp_replicate, dp_shard_cp) mesh.
  const bool hybrid = replicate > 1 && shard != 1;
  if (hybrid && shard < 1) {
    b.refuse(s + ".data_parallel_shard_degree",
             fmt::format("{} with data_parallel_replicate_degree {} (HSDP): give the shard degree "
                         "itself; shardplan prices hybrid sharding from it",
                         shard, replicate));
  }
  if (shard == 1) {
    b.set("--zero", "0", s + ".data_parallel_replicate_degree");
    if (replicate > 1) b.set("--dp", std::to_string(replicate), s + ".data_parallel_replicate_degree");
  } else {
    const std::string reshard = text(p, "fsdp_reshard_after_forward");
    const bool gathered = reshard == "never" || ((reshard.empty() || reshard == "default") && pp > 1);
    b.set("--zero", gathered ? "2" : "3", s + ".fsdp_reshard_after_forward");
    if (reshard.empty())
      b.note_default(fmt::format("no fsdp_reshard_after_forward: \"default\", which {}",
                                 pp > 1 ? "keeps parameters gathered under a pipeline (ZeRO-2)"
                                        : "reshards after forward (ZeRO-3)"));
    if (hybrid) {
      b.set("--dp", std::to_string(replicate * shard),
            s + ".data_parallel_replicate_degree x data_parallel_shard_degree");
      b.set("--dp-shard", std::to_string(shard), s + ".data_parallel_shard_degree");
    } else if (shard > 1) {
      b.set("--dp", std::to_string(shard), s + ".data_parallel_shard_degree");
    } else {
      // -1: the launcher's world size, which the file does not hold. The least world its
      // degrees allow stands for it: tp x pp x cp, times the data-parallel ranks expert
      // parallelism borrows (ep x expert tp must divide tp x dp x cp).
      const long long experts_tp = number(b, p, s, "expert_tensor_parallel_degree", 1);
      const long long ep_ranks = std::max(1LL, ep * experts_tp);
      const long long dp = ep_ranks / std::gcd(ep_ranks, std::max(1LL, tp * cp));
      b.launcher_default("--gpus", std::to_string(tp * pp * cp * dp),
                         fmt::format("data_parallel_shard_degree -1: the launcher's world size, "
                                     "which the file leaves open; the least its degrees allow "
                                     "({}) stands for it (--gpus sets it)",
                                     tp * pp * cp * dp));
    }
  }
  if (pp <= 1) return;
  const std::string schedule = text(p, "pipeline_parallel_schedule");
  const std::string name = schedule.empty() ? "1F1B" : schedule;
  const ScheduleRow* row = titan_schedule_row(name);
  if (row == nullptr) {
    b.refuse(s + ".pipeline_parallel_schedule",
             "'" + name + "' is not a schedule shardplan prices (" + titan_schedule_names() + ")");
  }
  b.set("--schedule", row->name, s + ".pipeline_parallel_schedule");
  if (schedule.empty()) b.note_default("no pipeline_parallel_schedule: 1F1B, torchtitan's default");
  b.set("--micro-batch", std::to_string(number(b, p, s, "pipeline_parallel_microbatch_size", 1)),
        s + ".pipeline_parallel_microbatch_size");
  StagesByLayers& st = b.config().stages;
  st.layers_per_stage = static_cast<int>(number(b, p, s, "pipeline_parallel_layers_per_stage", 0));
  st.first_less = static_cast<int>(number(b, p, s, "pipeline_parallel_first_stage_less_layers", 0));
  st.last_less = static_cast<int>(number(b, p, s, "pipeline_parallel_last_stage_less_layers", 0));
  st.key = s + ".pipeline_parallel_layers_per_stage";
  if (st.layers_per_stage == 0 && name != "1F1B" && name != "GPipe") {
    b.refuse(st.key, "a multi-stage schedule without layers per stage: shardplan needs "
                     "pipeline_parallel_layers_per_stage to count the virtual stages");
  }
}

void training(const toml::table& t, long long pp, long long pp_micro, Builder& b) {
  const std::string s = "training";
  // Before v0.1 the per-rank batch was training.batch_size.
  const std::string local_key = t.get("local_batch_size") || !t.get("batch_size") ? "local_batch_size"
                                                                                   : "batch_size";
  const long long local = number(b, t, s, local_key, 8);
  if (!t.get(local_key)) b.note_default("no training.local_batch_size: 8, torchtitan's default");
  if (pp <= 1) b.set("--micro-batch", std::to_string(local), s + "." + local_key);
  const long long global = number(b, t, s, "global_batch_size", -1);
  if (global > 0) {
    b.set("--global-batch", std::to_string(global), s + ".global_batch_size");
  } else {
    // global_batch_size -1: local_batch_size x data-parallel degree, so each rank runs
    // local / micro-batch micro-batches.
    const long long micro = pp > 1 ? std::max(1LL, pp_micro) : std::max(1LL, local);
    b.config().default_accumulation = static_cast<int>(std::max(1LL, local / micro));
  }
  b.set("--seq-len", std::to_string(number(b, t, s, "seq_len", 2048)), s + ".seq_len");
  if (!t.get("seq_len")) b.note_default("no training.seq_len: 2048, torchtitan's default");
  const std::string param = text(t, "mixed_precision_param");
  if (text(t, "dtype") == "bfloat16") {
    b.set("--precision", "bf16-pure", s + ".dtype");
  } else if (param == "float32") {
    b.set("--precision", "fp32", s + ".mixed_precision_param");
  } else {
    b.set("--precision", "bf16", s + ".mixed_precision_param");
  }
  if (const toml::node* n = t.get("enable_cpu_offload"); n && n->value_or(false)) {
    // FSDP2 CPUOffloadPolicy: parameters, gradients and optimizer states on the host.
    b.set("--offload", "optimizer,params", s + ".enable_cpu_offload");
  }
  // Round-robin routing, every expert the same tokens (torchtitan PR #1670; a debug switch).
  if (const toml::node* n = t.get("debug_moe_force_load_balance"); n && n->value_or(false))
    b.set("--moe-force-balance", "true", s + ".debug_moe_force_load_balance");
}

// torch.compile of the loss: [compile] enable with "loss" among its components (torchtitan
// 08b8b244f on; components default to ["model", "loss"]); before it, training.compile compiled
// the model and, from bbb1b616e (2025-04-02, so every tagged release), the loss with it.
void compile(const toml::table& root, Builder& b) {
  const toml::table* c = root["compile"].as_table();
  if (c && (*c)["enable"].value_or(false)) {
    const toml::array* components = (*c)["components"].as_array();
    bool loss = components == nullptr;
    if (components)
      for (const toml::node& n : *components) loss = loss || n.value_or(std::string()) == "loss";
    if (loss)
      b.set("--compiled-loss", "true", components ? "compile.components" : "compile.enable");
    if (!components)
      b.note_default("no compile.components: [\"model\", \"loss\"], torchtitan's default");
    return;
  }
  const toml::table* t = root["training"].as_table();
  if (t && (*t)["compile"].value_or(false)) {
    b.set("--compiled-loss", "true", "training.compile");
    b.note_default(
        "training.compile compiles the loss with the model from torchtitan 2025-04-02 (bbb1b616e) "
        "to its replacement by compile.components; files older than that ran the loss eager");
  }
}

void model(const toml::table& root, Builder& b) {
  const toml::table* m = root["model"].as_table();
  const toml::array* converters = m ? (*m)["converters"].as_array() : nullptr;
  if (converters) {
    for (const toml::node& c : *converters) {
      const std::string name = c.value_or(std::string());
      if (name.find("float8") != std::string::npos) b.set("--precision", "fp8", "model.converters");
    }
  }
  // Early 2025: converters as one string; before it, [float8] enable_float8_linear.
  if (m && text(*m, "converters").find("float8") != std::string::npos)
    b.set("--precision", "fp8", "model.converters");
  if (const toml::table* f8 = root["float8"].as_table();
      f8 && (*f8)["enable_float8_linear"].value_or(false))
    b.set("--precision", "fp8", "float8.enable_float8_linear");
  const std::string name = m ? text(*m, "name") : "";
  const std::string flavor = m ? text(*m, "flavor") : "";
  // torchtitan's registered flavors: the model preset of the same shape names the flavor among
  // its aliases, "torchtitan:qwen3/32B" (models/*/__init__.py; llama3's flavors are Llama
  // 3.1's). A --model beside the file replaces the file's model without complaint (a registered
  // TrainSpec shardplan has no preset for).
  const std::string prefix = "torchtitan:" + name + "/";
  std::string preset, known;
  for (const PresetSummary& s : list_presets(ProfileKind::model))
    for (const std::string& alias : s.aliases) {
      if (alias.rfind(prefix, 0) != 0) continue;
      if (alias == prefix + flavor) preset = s.name;
      known += (known.empty() ? "" : ", ") + alias.substr(prefix.size());
    }
  // torchtitan's own model families: a flavor without a preset is named, not guessed.
  const std::set<std::string> families = {"llama3", "llama4", "deepseek_v3", "qwen3", "flux"};
  if (!preset.empty()) {
    b.launcher_default("--model", preset,
                       fmt::format("model {} {}: shardplan's {} preset", name, flavor, preset));
    b.config().settings.back().key = "model.flavor";
  } else if (families.count(name)) {
    b.config().missing_model = fmt::format(
        "model {} flavor {} has no shardplan preset ({} flavors with one: {}); give --model "
        "config.json (the model's Hugging Face config) beside --from",
        name, flavor, name, known.empty() ? "none" : known);
  } else if (!name.empty()) {
    // A name shardplan wrote for a model the user registers: the preset of that name.
    b.launcher_default("--model", name == flavor || flavor.empty() ? name : flavor,
                       fmt::format("model {} {}: the shardplan preset of that name (--model "
                                   "gives another)",
                                   name, flavor));
    b.config().settings.back().key = "model.name";
  }
}

}  // namespace

LauncherConfig read_torchtitan(const std::string& text_in, const std::string& path) {
  Builder b(LauncherFormat::torchtitan, path, "torchtitan");
  toml::table root;
  try {
    root = toml::parse(text_in, path);
  } catch (const toml::parse_error& e) {
    b.refuse(fmt::format("line {}", e.source().begin.line), std::string(e.description()));
  }
  check_keys(root, b);
  const toml::table empty;
  // Before v0.1 the degrees sat in [training] and [experimental]: read where the file has them.
  const toml::table* given = root["parallelism"].as_table();
  toml::table merged = given != nullptr ? *given : empty;
  for (const char* old : {"training", "experimental"}) {
    const toml::table* t = root[old].as_table();
    if (!t) continue;
    for (const auto& [key, node] : *t) {
      if (plan_sections().at("parallelism").count(std::string(key.str())) &&
          !merged.contains(key.str()))
        merged.insert(key.str(), node);
    }
  }
  const toml::table* p = &merged;
  parallelism(*p, b);
  const long long pp = p ? number(b, *p, "parallelism", "pipeline_parallel_degree", 1) : 1;
  const long long pp_micro =
      p ? number(b, *p, "parallelism", "pipeline_parallel_microbatch_size", 1) : 1;
  const toml::table* t = root["training"].as_table();
  training(t ? *t : empty, pp, pp_micro, b);
  // Before disable_loss_parallel (mid-2024) the switch was training.enable_loss_parallel.
  if (t && number(b, *p, "parallelism", "tensor_parallel_degree", 1) > 1 &&
      !(*t)["enable_loss_parallel"].value_or(true))
    b.set("--full-vocab-loss", "true", "training.enable_loss_parallel");
  const toml::table* ac = root["activation_checkpoint"].as_table();
  const std::string mode = ac ? text(*ac, "mode") : "";
  if (mode.empty()) {
    b.set("--recompute", "selective", "(torchtitan default)");
    b.note_default("no activation_checkpoint.mode: selective, torchtitan's default");
  } else if (mode == "none" || mode == "selective" || mode == "full") {
    b.set("--recompute", mode, "activation_checkpoint.mode");
  } else {
    b.refuse("activation_checkpoint.mode", "'" + mode + "' is not none, selective or full");
  }
  compile(root, b);
  model(root, b);
  return b.take();
}

}  // namespace shardplan::config
