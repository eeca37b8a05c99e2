// An accelerate config YAML read back (accelerate/commands/config/config_args.py and the FSDP,
// DeepSpeed and Megatron-LM plugins in utils/dataclasses.py): processes, machines, mixed
// precision, and the plugin section of its distributed_type.
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <map>
#include <set>

#include "read_parts.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"

namespace shardplan::config {
namespace {

const std::set<std::string>& top_keys() {
  static const std::set<std::string> table = {
      "compute_environment", "distributed_type", "mixed_precision", "num_machines",
      "num_processes", "machine_rank", "main_process_ip", "main_process_port", "rdzv_backend",
      "same_network", "gpu_ids", "use_cpu", "debug", "main_training_function",
      "enable_cpu_affinity", "downcast_bf16", "tpu_env", "tpu_use_cluster", "tpu_use_sudo",
      "tpu_name", "tpu_zone", "commands", "command_file", "dynamo_config", "fsdp_config",
      "deepspeed_config", "megatron_lm_config", "fp8_config", "ipex_config", "mpirun_config",
      "parallelism_config", "num_cpu_threads_per_process"};
  return table;
}

const std::set<std::string>& fsdp_keys() {
  static const std::set<std::string> table = {
      "fsdp_version", "fsdp_reshard_after_forward", "fsdp_sharding_strategy",
      "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
      "fsdp_backward_prefetch", "fsdp_backward_prefetch_policy", "fsdp_forward_prefetch",
      "fsdp_state_dict_type", "fsdp_offload_params", "fsdp_cpu_ram_efficient_loading",
      "fsdp_sync_module_states", "fsdp_use_orig_params", "fsdp_activation_checkpointing"};
  return table;
}

const std::set<std::string>& deepspeed_keys() {
  static const std::set<std::string> table = {
      "zero_stage", "offload_optimizer_device", "offload_param_device",
      "offload_optimizer_nvme_path", "offload_param_nvme_path", "gradient_accumulation_steps",
      "gradient_clipping", "zero3_init_flag", "zero3_save_16bit_model", "deepspeed_config_file",
      "deepspeed_hostfile", "deepspeed_multinode_launcher", "deepspeed_moe_layer_cls_names",
      "deepspeed_exclusion_filter", "deepspeed_inclusion_filter"};
  return table;
}

const std::set<std::string>& megatron_keys() {
  static const std::set<std::string> table = {
      "megatron_lm_tp_degree", "megatron_lm_pp_degree", "megatron_lm_num_micro_batches",
      "megatron_lm_sequence_parallelism", "megatron_lm_recompute_activations",
      "megatron_lm_use_distributed_optimizer", "megatron_lm_gradient_clipping"};
  return table;
}

std::string scalar(const YAML::Node& n) {
  return n && n.IsScalar() ? n.Scalar() : "";
}

bool yes(const YAML::Node& n) {
  const std::string s = scalar(n);
  return s == "true" || s == "True" || s == "TRUE" || s == "yes";
}

void check_section(const YAML::Node& root, const char* section, const std::set<std::string>& keys,
                   Builder& b) {
  const YAML::Node n = root[section];
  if (!n) return;
  if (!n.IsMap()) b.refuse(section, "is not a mapping");
  std::vector<std::string> names(keys.begin(), keys.end());
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (keys.count(k) == 0) b.unknown(fmt::format("{}.{}", section, k), names);
  }
}

void fsdp(const YAML::Node& f, Builder& b) {
  const std::string v = scalar(f["fsdp_version"]);
  // FSDP2: fsdp_reshard_after_forward true = FULL_SHARD (ZeRO-3), false = SHARD_GRAD_OP (ZeRO-2)
  // (fsdp1_vs_fsdp2.md); FSDP1 names the strategy.
  const std::string reshard = scalar(f["fsdp_reshard_after_forward"]);
  const std::string strategy = scalar(f["fsdp_sharding_strategy"]);
  const std::string how = !reshard.empty() ? reshard : strategy;
  const std::map<std::string, std::string> stage = {
      {"true", "3"}, {"True", "3"}, {"FULL_SHARD", "3"}, {"1", "3"},
      {"false", "2"}, {"False", "2"}, {"SHARD_GRAD_OP", "2"}, {"2", "2"},
      {"NO_SHARD", "0"}, {"3", "0"}};
  const std::string key = !reshard.empty() ? "fsdp_config.fsdp_reshard_after_forward"
                                           : "fsdp_config.fsdp_sharding_strategy";
  if (how.empty()) {
    b.set("--zero", "3", "(accelerate default)");
    b.note_default("no fsdp_reshard_after_forward / fsdp_sharding_strategy: full sharding "
                   "(ZeRO-3), accelerate's default");
  } else if (how == "HYBRID_SHARD" || how == "_HYBRID_SHARD_ZERO2" || how == "4" || how == "5") {
    // FSDP1 hybrid sharding: shard inside a node, replicate across nodes (PyTorch
    // ShardingStrategy.HYBRID_SHARD / _HYBRID_SHARD_ZERO2; FSDP1 takes no tp or cp here).
    const std::string node = b.value_of("--gpus-per-node");
    if (node.empty())
      b.refuse(key, "'" + how + "' shards inside a node: give num_processes and num_machines");
    b.set("--zero", how == "HYBRID_SHARD" || how == "4" ? "3" : "2", key);
    b.set("--dp-shard", node, key + " (one node: num_processes / num_machines)");
  } else if (stage.count(how) == 0) {
    b.refuse(key, "'" + how + "' is not true/false or FULL_SHARD, SHARD_GRAD_OP, NO_SHARD");
  } else {
    b.set("--zero", stage.at(how), key);
  }
  if (!v.empty() && v != "1" && v != "2") b.refuse("fsdp_config.fsdp_version", "'" + v + "' is not 1 or 2");
  if (yes(f["fsdp_offload_params"]))
    b.set("--offload", "optimizer,params", "fsdp_config.fsdp_offload_params");
  if (yes(f["fsdp_activation_checkpointing"]))
    b.set("--recompute", "full", "fsdp_config.fsdp_activation_checkpointing");
}

// FSDP2 over accelerate's ParallelismConfig mesh: dp_replicate_size > 1 with dp_shard_size > 1 is
// HSDP (FSDP2 shards over dp_shard and replicates over dp_replicate).
void parallelism_config(const YAML::Node& pc, Builder& b) {
  const std::string k = "parallelism_config.";
  const std::string replicate = scalar(pc["parallelism_config_dp_replicate_size"]);
  const std::string shard = scalar(pc["parallelism_config_dp_shard_size"]);
  const long long r =
      replicate.empty() ? 1 : integer(b, k + "parallelism_config_dp_replicate_size", replicate, 1);
  const long long n =
      shard.empty() ? 1 : integer(b, k + "parallelism_config_dp_shard_size", shard, 1);
  if (r > 1 && n > 1) {
    b.set("--dp", std::to_string(r * n), k + "dp_replicate_size x dp_shard_size");
    b.set("--dp-shard", std::to_string(n), k + "parallelism_config_dp_shard_size");
  } else if (r * n > 1) {
    b.set("--dp", std::to_string(r * n), k + "dp_replicate_size x dp_shard_size");
  }
  // parallelism_config.py ParallelismConfig: tp_size, cp_size (ring attention) and sp_size
  // (sequence parallelism of sp_backend "deepspeed": DeepSpeed-Ulysses, --cp-kind ulysses).
  for (const auto& [key, flag] : {std::pair{"parallelism_config_tp_size", "--tp"},
                                   std::pair{"parallelism_config_cp_size", "--cp"},
                                   std::pair{"parallelism_config_sp_size", "--cp"}}) {
    const std::string v = scalar(pc[key]);
    if (v.empty()) continue;
    const long long d = integer(b, k + key, v, 1);
    if (d > 1 || b.value_of(flag).empty()) b.set(flag, std::to_string(d), k + key);
    if (d > 1 && std::string(key) == "parallelism_config_sp_size")
      b.set("--cp-kind", "ulysses", k + key + " (DeepSpeed-Ulysses)");
  }
}

// deepspeed_config_file: the plan is in that JSON (path as written, else beside the YAML),
// read as DeepSpeed reads it; accelerate's own keys give the processes.
bool linked_deepspeed(const YAML::Node& d, Builder& b) {
  if (!d["deepspeed_config_file"]) return false;
  const std::string key = "deepspeed_config.deepspeed_config_file";
  const std::string file = scalar(d["deepspeed_config_file"]);
  const std::string& yaml = b.config().path;
  const std::string found = linked_file(file, yaml);
  if (found.empty()) {
    b.refuse(key, "'" + file + "' is not readable here (as written or beside " + yaml +
                      "): the plan is in that DeepSpeed JSON; give it to --from (with --gpus " +
                      b.value_of("--gpus") + ")");
  }
  const std::string text = read_text_file(found, yaml + ": " + key);
  const LauncherConfig ds = read_deepspeed(text, file);
  for (const ConfigSetting& s : ds.settings) {
    if (s.flag == "--precision" && !b.value_of("--precision").empty()) continue;
    b.set(s.flag, s.value, file + ": " + s.key);
  }
  for (const std::string& n : ds.notes) b.note(fmt::format("{}: {}", file, n));
  for (const std::string& n : ds.defaults) b.note_default(fmt::format("{}: {}", file, n));
  b.config().default_accumulation = ds.default_accumulation;
  return true;
}

void deepspeed(const YAML::Node& d, Builder& b) {
  if (linked_deepspeed(d, b)) return;
  const std::string stage = scalar(d["zero_stage"]);
  b.set("--zero", stage.empty() ? "0" : std::to_string(integer(b, "deepspeed_config.zero_stage", stage)),
        "deepspeed_config.zero_stage");
  std::string offload, to;
  for (const auto& [key, what] : {std::pair{"offload_optimizer_device", "optimizer"},
                                   std::pair{"offload_param_device", "params"}}) {
    const std::string device = scalar(d[key]);
    if (device.empty() || device == "none") continue;
    if (device != "cpu" && device != "nvme")
      b.refuse(fmt::format("deepspeed_config.{}", key), "'" + device + "' is not none, cpu or nvme");
    if (!offload.empty()) offload += ',';
    offload += what;
    to = device;
  }
  if (!offload.empty()) {
    b.set("--offload", offload, "deepspeed_config.offload_*_device");
    b.set("--offload-to", to, "deepspeed_config.offload_*_device");
  }
  const std::string accum = scalar(d["gradient_accumulation_steps"]);
  if (!accum.empty()) {
    b.config().default_accumulation =
        static_cast<int>(integer(b, "deepspeed_config.gradient_accumulation_steps", accum, 1));
  }
}

void megatron(const YAML::Node& m, Builder& b) {
  const std::string k = "megatron_lm_config.";
  for (const auto& [key, flag] : {std::pair{"megatron_lm_tp_degree", "--tp"},
                                   std::pair{"megatron_lm_pp_degree", "--pp"}}) {
    const std::string v = scalar(m[key]);
    if (!v.empty()) b.set(flag, std::to_string(integer(b, k + key, v, 1)), k + key);
  }
  if (yes(m["megatron_lm_sequence_parallelism"]))
    b.set("--sequence-parallel", "true", k + "megatron_lm_sequence_parallelism");
  if (yes(m["megatron_lm_recompute_activations"]))
    b.set("--recompute", "selective", k + "megatron_lm_recompute_activations");
  if (yes(m["megatron_lm_use_distributed_optimizer"]))
    b.set("--zero", "1", k + "megatron_lm_use_distributed_optimizer");
  const std::string micro = scalar(m["megatron_lm_num_micro_batches"]);
  if (!micro.empty()) {
    b.config().default_accumulation =
        static_cast<int>(integer(b, k + "megatron_lm_num_micro_batches", micro, 1));
  }
}

LauncherConfig read_yaml(const YAML::Node& root, const std::string& path) {
  Builder probe(LauncherFormat::accelerate, path, "fsdp");
  if (!root.IsMap()) probe.refuse("YAML", "is not a mapping (an accelerate config is one)");
  const std::string type = scalar(root["distributed_type"]);
  const std::map<std::string, const char*> frameworks = {
      {"FSDP", "fsdp"}, {"DEEPSPEED", "deepspeed"}, {"MEGATRON_LM", "megatron"},
      {"MULTI_GPU", "fsdp"}, {"NO", "fsdp"}};
  if (frameworks.count(type) == 0) {
    probe.refuse("distributed_type", "'" + type + "' is not FSDP, DEEPSPEED, MEGATRON_LM, "
                                                  "MULTI_GPU or NO");
  }
  Builder b(LauncherFormat::accelerate, path, frameworks.at(type));
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string k = it->first.as<std::string>();
    if (top_keys().count(k) == 0)
      b.unknown(k, {"distributed_type", "num_processes", "num_machines", "mixed_precision"});
  }
  check_section(root, "fsdp_config", fsdp_keys(), b);
  check_section(root, "deepspeed_config", deepspeed_keys(), b);
  check_section(root, "megatron_lm_config", megatron_keys(), b);
  const std::string processes = scalar(root["num_processes"]);
  const std::string machines = scalar(root["num_machines"]);
  if (!processes.empty()) {
    const long long n = integer(b, "num_processes", processes, 1);
    const long long m = machines.empty() ? 1 : integer(b, "num_machines", machines, 1);
    if (n % m != 0) b.refuse("num_processes", fmt::format("{} processes do not fill {} machines", n, m));
    b.set("--gpus", std::to_string(n), "num_processes");
    b.set("--gpus-per-node", std::to_string(n / m), "num_processes / num_machines");
  } else {
    b.note_default("no num_processes: the GPUs come from --gpus");
  }
  const std::string mp = scalar(root["mixed_precision"]);
  const std::map<std::string, std::string> precision = {
      {"bf16", "bf16"}, {"fp16", "fp16"}, {"fp8", "fp8"}, {"no", "fp32"}, {"", "fp32"}};
  if (precision.count(mp) == 0) b.refuse("mixed_precision", "'" + mp + "' is not no, fp16, bf16 or fp8");
  b.set("--precision", precision.at(mp), "mixed_precision");
  if (mp.empty()) b.note_default("no mixed_precision: fp32, accelerate's default");
  // A plugin section left out is all defaults (an empty mapping).
  auto section = [&](const char* name) {
    const YAML::Node n = root[name];
    return n && n.IsMap() ? n : YAML::Node(YAML::NodeType::Map);
  };
  if (type == "FSDP") fsdp(section("fsdp_config"), b);
  if (type == "DEEPSPEED") deepspeed(section("deepspeed_config"), b);
  if ((type == "FSDP" || type == "DEEPSPEED") && root["parallelism_config"])
    parallelism_config(section("parallelism_config"), b);
  if (type == "MEGATRON_LM") megatron(section("megatron_lm_config"), b);
  if (type == "MULTI_GPU" || type == "NO") b.set("--zero", "0", "distributed_type");
  b.note_default("the per-process batch is the script's DataLoader batch_size, not in the YAML: "
                 "micro-batch 1 unless --micro-batch says otherwise");
  // Accelerator(gradient_accumulation_steps=1) by default: one micro-batch per process.
  if (b.config().default_accumulation == 0 && b.value_of("--global-batch").empty())
    b.config().default_accumulation = 1;
  return b.take();
}

}  // namespace

LauncherConfig read_accelerate(const std::string& text, const std::string& path) {
  try {
    return read_yaml(YAML::Load(text), path);
  } catch (const YAML::Exception& e) {
    // A syntax error, or a key or value of the wrong kind (a list where a name goes).
    throw InputError(fmt::format("{}: line {}", path, e.mark.line + 1), e.msg);
  }
}

}  // namespace shardplan::config
