// accelerate conformance: the start-up checks `accelerate launch --config_file` runs on a config
// YAML, transcribed as rules with their sources, over a grid of models (dense, GQA, MoE, MLA) and
// plans. huggingface/accelerate commit 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83 (1.15.0.dev0,
// 2026-07-24): commands/config/config_args.py (BaseConfig, ClusterConfig), commands/launch.py
// (launch_command_parser, _validate_launch_command, launch_command), utils/launch.py
// (prepare_multi_gpu_env, prepare_extend_env_parallelism_config), utils/dataclasses.py
// (FullyShardedDataParallelPlugin.__post_init__, DeepSpeedPlugin._deepspeed_config_checks),
// utils/environment.py (str_to_bool), utils/constants.py and parallelism_config.py
// (ParallelismConfig.__post_init__, _validate_accelerator).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "shardplan/emit.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

/// A config as `accelerate launch` meets it: the YAML, the launch lines, and the world it must
/// start (the cluster's GPUs) with the plan that priced it.
struct AccelerateLaunch {
  YAML::Node config;
  std::vector<std::string> launch;
  int world_size = 0;
  int gpus_per_node = 0;
  ParallelPlan plan;
};

using Check = std::function<std::string(const AccelerateLaunch&)>;
struct AccelerateRule {
  const char* id;
  const char* source;
  Check check;
};

std::string text(const YAML::Node& n) {
  return n && n.IsScalar() ? n.Scalar() : "";
}
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}
long long whole(const YAML::Node& n, long long fallback) {
  return n && n.IsScalar() ? n.as<long long>() : fallback;
}
std::vector<std::string> keys(const YAML::Node& map) {
  std::vector<std::string> out;
  if (!map || !map.IsMap()) return out;
  for (auto it = map.begin(); it != map.end(); ++it) out.push_back(it->first.as<std::string>());
  return out;
}
// A section, or an empty mapping where the YAML has none (indexing a missing node throws).
YAML::Node section(const AccelerateLaunch& l, const char* name) {
  const YAML::Node n = l.config[name];
  return n && n.IsMap() ? n : YAML::Node(YAML::NodeType::Map);
}
bool is_fsdp(const AccelerateLaunch& l) {
  return text(l.config["distributed_type"]) == "FSDP";
}

// utils/environment.py str_to_bool: the only spellings of a truth value; anything else raises
// "invalid truth value". Returns -1 for the rest.
int truth(const YAML::Node& n) {
  const std::string v = lower(text(n));
  for (const char* t : {"y", "yes", "t", "true", "on", "1"})
    if (v == t) return 1;
  for (const char* f : {"n", "no", "f", "false", "off", "0"})
    if (v == f) return 0;
  return -1;
}

// The fields of ClusterConfig (and BaseConfig), plus the two old keys process_config converts
// (fp16, dynamo_backend): from_yaml_file raises on any other top-level key.
const std::set<std::string> kClusterFields = {
    "compute_environment", "distributed_type", "mixed_precision", "use_cpu", "debug",
    "num_processes", "machine_rank", "num_machines", "gpu_ids", "main_process_ip",
    "main_process_port", "rdzv_backend", "same_network", "main_training_function",
    "enable_cpu_affinity", "fp8_config", "deepspeed_config", "fsdp_config", "parallelism_config",
    "megatron_lm_config", "mpirun_config", "downcast_bf16", "tpu_name", "tpu_zone",
    "tpu_use_cluster", "tpu_use_sudo", "command_file", "commands", "tpu_vm", "tpu_env",
    "dynamo_config", "fp16", "dynamo_backend"};

// What prepare_multi_gpu_env turns into FSDP_* variables; _validate_launch_command copies any
// other fsdp_config key onto args too, where nothing reads it.
const std::set<std::string> kFsdpRead = {
    "fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward", "fsdp_offload_params",
    "fsdp_min_num_params", "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap",
    "fsdp_backward_prefetch", "fsdp_state_dict_type", "fsdp_forward_prefetch",
    "fsdp_use_orig_params", "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states",
    "fsdp_activation_checkpointing", "fsdp_ignored_modules"};

// launch_command_parser's parallelism_config_* arguments: the names prepare_extend_env_
// parallelism_config reads (parallelism_config keys are copied onto args unprefixed).
const std::set<std::string> kParallelismRead = {
    "parallelism_config_dp_replicate_size", "parallelism_config_dp_shard_size",
    "parallelism_config_tp_size", "parallelism_config_cp_size", "parallelism_config_cp_backend",
    "parallelism_config_cp_comm_strategy", "parallelism_config_sp_size",
    "parallelism_config_sp_backend", "parallelism_config_sp_seq_length",
    "parallelism_config_sp_seq_length_is_variable", "parallelism_config_sp_attn_implementation"};

std::string config_keys(const AccelerateLaunch& l) {
  for (const std::string& k : keys(l.config))
    if (!kClusterFields.count(k)) return "unknown key " + k;
  return "";
}

std::string distributed_type(const AccelerateLaunch& l) {
  const std::string env = text(l.config["compute_environment"]);
  if (!env.empty() && env != "LOCAL_MACHINE" && env != "AMAZON_SAGEMAKER")
    return "compute_environment " + env;
  const std::string d = text(l.config["distributed_type"]);
  if (d.empty()) return "A `distributed_type` must be specified in the config file.";
  // The shardplan plan runs under FSDP (FSDP2) or plain DDP (MULTI_GPU).
  if (d != "FSDP" && d != "MULTI_GPU" && d != "DEEPSPEED" && d != "NO")
    return "distributed_type " + d + " is not what the plan runs";
  if (d == "FSDP" && l.plan.zero < 2) return "FSDP for a ZeRO-" + std::to_string(l.plan.zero);
  return d == "MULTI_GPU" && l.plan.zero != 0 ? "MULTI_GPU (DDP) for a sharded plan" : "";
}

std::string mixed_precision(const AccelerateLaunch& l) {
  const std::string m = lower(text(l.config["mixed_precision"]));
  return m.empty() || m == "no" || m == "fp16" || m == "bf16" || m == "fp8"
             ? ""
             : "Unknown mixed_precision mode: " + m;
}

std::string processes(const AccelerateLaunch& l) {
  const long long n = whole(l.config["num_processes"], -1);
  const long long machines = whole(l.config["num_machines"], 1);
  if (n == -1) return "You need to manually pass in `--num_processes` using this config yaml.";
  if (n != l.world_size) return fmt::format("num_processes {} for {} GPUs", n, l.world_size);
  if (machines < 1 || n % machines != 0)
    return fmt::format("num_processes {} over {} machines", n, machines);
  const long long per = n / machines;
  return machines > 1 && per != l.gpus_per_node
             ? fmt::format("{} processes per machine on {}-GPU machines", per, l.gpus_per_node)
             : "";
}

// More than one machine: master_addr = str(main_process_ip) and node_rank = machine_rank, from
// the YAML or the launch line; rank 0 for every machine would not start.
std::string machines(const AccelerateLaunch& l) {
  if (whole(l.config["num_machines"], 1) <= 1) return "";
  const std::string line = l.launch.empty() ? "" : l.launch.front();
  if (!l.config["main_process_ip"] && line.find("--main_process_ip") == std::string::npos)
    return "no main_process_ip (master_addr would be 'None')";
  return line.find("--machine_rank") == std::string::npos ? "every machine has machine_rank 0"
                                                          : "";
}

std::string fsdp_version(const AccelerateLaunch& l) {
  if (!is_fsdp(l)) return l.config["fsdp_config"] ? "fsdp_config without FSDP" : "";
  const std::string v = text(section(l, "fsdp_config")["fsdp_version"]);
  if (v.empty()) return "no fsdp_version: --fsdp_version defaults to 1 (FSDP1)";
  return v == "2" ? "" : "fsdp_version " + v + " (shardplan prices FSDP2's fully_shard)";
}

std::string fsdp_keys(const AccelerateLaunch& l) {
  for (std::string k : keys(section(l, "fsdp_config"))) {
    if (k.rfind("fsdp", 0) != 0) k = "fsdp_" + k;
    if (!kFsdpRead.count(k)) return k + " reaches no FSDP_* variable: ignored";
  }
  return "";
}

std::string fsdp_booleans(const AccelerateLaunch& l) {
  const YAML::Node f = section(l, "fsdp_config");
  for (const char* k : {"fsdp_offload_params", "fsdp_cpu_ram_efficient_loading",
                        "fsdp_sync_module_states", "fsdp_activation_checkpointing",
                        "fsdp_use_orig_params", "fsdp_forward_prefetch"}) {
    if (f[k] && truth(f[k]) < 0) return fmt::format("invalid truth value {} for {}", text(f[k]), k);
  }
  return "";
}

std::string fsdp2_reshard(const AccelerateLaunch& l) {
  if (!is_fsdp(l)) return "";
  const YAML::Node r = section(l, "fsdp_config")["fsdp_reshard_after_forward"];
  const int value = r ? truth(r) : 1;  // FSDP_RESHARD_AFTER_FORWARD defaults to "true"
  if (value < 0)
    return "reshard_after_forward set to " + text(r) + ". This is not supported with FSDP2";
  return (value == 1) == (l.plan.zero == 3)
             ? ""
             : fmt::format("reshard_after_forward {} for ZeRO-{}", value == 1, l.plan.zero);
}

std::string fsdp_state_dict(const AccelerateLaunch& l) {
  const std::string s = upper(text(section(l, "fsdp_config")["fsdp_state_dict_type"]));
  if (!is_fsdp(l) || s.empty()) return "";
  if (s != "FULL_STATE_DICT" && s != "SHARDED_STATE_DICT" && s != "LOCAL_STATE_DICT")
    return "StateDictType has no " + s;
  return s == "LOCAL_STATE_DICT" ? "FSDP2 does not support LOCAL_STATE_DICT." : "";
}

std::string fsdp_wrap(const AccelerateLaunch& l) {
  const std::string w = upper(text(section(l, "fsdp_config")["fsdp_auto_wrap_policy"]));
  if (!is_fsdp(l)) return "";
  // Without a policy FSDP_AUTO_WRAP_POLICY is unset: NO_WRAP, one unit for the whole model,
  // not the per-block units shardplan priced.
  if (w.empty() || w == "NO_WRAP") return "no per-block wrapping";
  return w == "TRANSFORMER_BASED_WRAP" || w == "SIZE_BASED_WRAP" ? ""
                                                                  : "Invalid auto wrap policy: " + w;
}

std::string fsdp_offload(const AccelerateLaunch& l) {
  const YAML::Node o = section(l, "fsdp_config")["fsdp_offload_params"];
  const bool on = o && truth(o) == 1;
  return on == l.plan.offload.any() ? "" : "fsdp_offload_params does not match the plan";
}

std::string ram_efficient_loading(const AccelerateLaunch& l) {
  const YAML::Node f = section(l, "fsdp_config");
  const bool loading = f["fsdp_cpu_ram_efficient_loading"]
                           ? truth(f["fsdp_cpu_ram_efficient_loading"]) == 1
                           : true;  // launch_command_parser default "true"
  const bool sync = f["fsdp_sync_module_states"] ? truth(f["fsdp_sync_module_states"]) == 1 : true;
  return is_fsdp(l) && loading && !sync
             ? "When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to "
               "`True`"
             : "";
}

std::string parallelism(const AccelerateLaunch& l) {
  const YAML::Node pc = l.config["parallelism_config"];
  const ParallelPlan& p = l.plan;
  if (!pc) return p.tp > 1 || p.cp > 1 ? "tp or cp without a parallelism_config" : "";
  for (const std::string& k : keys(pc))
    if (!kParallelismRead.count(k)) return k + " is no parallelism_config argument: ignored";
  const long long rep = whole(pc["parallelism_config_dp_replicate_size"], 1);
  const long long shard = whole(pc["parallelism_config_dp_shard_size"], 1);
  const long long tp = whole(pc["parallelism_config_tp_size"], 1);
  const long long cp = whole(pc["parallelism_config_cp_size"], 1);
  const long long sp = whole(pc["parallelism_config_sp_size"], 1);
  if (rep < 1 || shard < 1 || tp < 1 || cp < 1 || sp < 1) return "a size below 1";
  if (cp > 1 && sp > 1) return "CP and SP are mutually exclusive";
  if ((tp > 1 || cp > 1) && rep > 1 && shard == 1)
    return "Tensor/Context parallelism cannot be used with pure data parallelism";
  if (rep * shard * tp * cp * sp != l.world_size)
    return fmt::format("ParallelismConfig total_size ({}) does not match num_processes ({})",
                       rep * shard * tp * cp * sp, l.world_size);
  if (!is_fsdp(l)) return "ParallelismConfig without FSDP2";
  return tp == p.tp && cp == p.cp && rep * shard == p.dp ? "" : "degrees are not the plan's";
}

std::string deepspeed_file(const AccelerateLaunch& l) {
  const YAML::Node ds = section(l, "deepspeed_config");
  if (!ds["deepspeed_config_file"]) return "";
  for (const char* k : {"gradient_accumulation_steps", "gradient_clipping", "zero_stage",
                        "offload_optimizer_device", "offload_param_device",
                        "offload_param_nvme_path", "offload_optimizer_nvme_path",
                        "zero3_save_16bit_model"}) {
    if (ds[k]) return std::string("deepspeed_config_file with ") + k;
  }
  return l.config["mixed_precision"] ? "deepspeed_config_file with mixed_precision" : "";
}

const std::vector<AccelerateRule>& accelerate_rules() {
  static const std::vector<AccelerateRule> rules = {
      {"config-keys",
       "commands/config/config_args.py BaseConfig.from_yaml_file: 'The config file at ... had "
       "unknown keys'",
       config_keys},
      {"distributed-type",
       "config_args.py BaseConfig.process_config ('A `distributed_type` must be specified') and "
       "__post_init__ (DistributedType / ComputeEnvironment values)",
       distributed_type},
      {"mixed-precision",
       "utils/launch.py prepare_multi_gpu_env: PrecisionType (no, fp8, fp16, bf16)",
       mixed_precision},
      {"processes",
       "commands/launch.py _validate_launch_command (num_processes -1); utils/launch.py "
       "prepare_multi_gpu_env: nproc_per_node = num_processes // num_machines",
       processes},
      {"machines",
       "utils/launch.py prepare_multi_gpu_env: master_addr = str(main_process_ip), node_rank = "
       "machine_rank",
       machines},
      {"fsdp-version",
       "commands/launch.py launch_command_parser: --fsdp_version default '1', choices 1, 2",
       fsdp_version},
      {"fsdp-keys",
       "commands/launch.py _validate_launch_command copies fsdp_config.x to args.fsdp_x; "
       "utils/launch.py prepare_multi_gpu_env reads only its FSDP_* arguments",
       fsdp_keys},
      {"fsdp-booleans", "utils/environment.py str_to_bool: 'invalid truth value'", fsdp_booleans},
      {"fsdp2-reshard",
       "utils/dataclasses.py FullyShardedDataParallelPlugin.__post_init__: FSDP2 needs a bool "
       "reshard_after_forward (true = ZeRO-3, false = ZeRO-2)",
       fsdp2_reshard},
      {"fsdp-state-dict",
       "utils/dataclasses.py FullyShardedDataParallelPlugin.set_state_dict_type: "
       "StateDictType[...]; 'FSDP2 does not support LOCAL_STATE_DICT.'",
       fsdp_state_dict},
      {"fsdp-wrap",
       "utils/dataclasses.py FullyShardedDataParallelPlugin.__post_init__: 'Invalid auto wrap "
       "policy' (utils/constants.py FSDP_AUTO_WRAP_POLICY)",
       fsdp_wrap},
      {"fsdp-offload",
       "utils/launch.py prepare_multi_gpu_env FSDP_OFFLOAD_PARAMS; __post_init__ cpu_offload "
       "(CPUOffloadPolicy)",
       fsdp_offload},
      {"ram-efficient-loading",
       "utils/launch.py prepare_multi_gpu_env: 'When using `--fsdp_cpu_ram_efficient_loading` "
       "set `--fsdp_sync_module_states` to `True`'",
       ram_efficient_loading},
      {"parallelism-config",
       "utils/launch.py prepare_extend_env_parallelism_config; parallelism_config.py "
       "ParallelismConfig.__post_init__ and _validate_accelerator (total_size == num_processes)",
       parallelism},
      {"deepspeed-config-file",
       "commands/launch.py launch_command (deepspeed_fields_from_accelerate_config); "
       "utils/dataclasses.py DeepSpeedPlugin._deepspeed_config_checks",
       deepspeed_file},
  };
  return rules;
}

std::vector<std::string> failures(const AccelerateLaunch& l) {
  std::vector<std::string> out;
  for (const AccelerateRule& r : accelerate_rules()) {
    const std::string why = r.check(l);
    if (!why.empty()) out.push_back(std::string(r.id) + ": " + why);
  }
  return out;
}

struct AccelerateCase {
  const char* model;
  const char* cluster;
  int gpus, tp, zero;
  bool offload;
  Recompute recompute;
  Precision precision;
};

TrainingSpec fsdp_training(const ModelSpec& m, Precision precision) {
  TrainingSpec t = test::training(m.seq_len, 512);
  t.framework = load_framework(Framework::fsdp);
  set_precision(t, precision);  // after the framework: fp8 is its default recipe
  return t;
}

EmitInputs inputs_for(const ModelSpec& m, const ClusterSpec& c, const TrainingSpec& t,
                      const ParallelPlan& p) {
  RunbookOptions o;
  o.checkpoint_interval_s = kDefaultCheckpointIntervalS;
  EmitInputs in{m, c, t, p, estimate(m, t, p, c), {}, {}, "flags", ""};
  in.runbook = plan_runbook(m, t, p, c, in.estimate, o);
  in.settings =
      long_run_settings(in.runbook, IntervalChoice::default_interval, kDefaultSeed, false);
  return in;
}

EmitInputs accelerate_inputs_of(const AccelerateCase& g) {
  const ModelSpec m = load_model(g.model);
  ParallelPlan p = test::plan(g.gpus / g.tp, g.tp, 1);
  p.zero = g.zero;
  p.recompute = g.recompute;
  p.offload.optimizer = p.offload.params = g.offload;
  return inputs_for(m, test::cluster(g.gpus, g.cluster), fsdp_training(m, g.precision), p);
}

// The YAML and the lines under its "# launch:" comment.
AccelerateLaunch launch_of(const EmitInputs& in) {
  const std::string written = emit_text(LauncherFormat::accelerate, in);
  std::vector<std::string> lines;
  const auto begin = written.find("# launch:\n");
  if (begin != std::string::npos) {
    size_t at = begin + 10;
    while (written.compare(at, 4, "#   ") == 0) {
      const size_t end = written.find('\n', at);
      lines.push_back(written.substr(at + 4, end - at - 4));
      at = end + 1;
    }
  }
  return {YAML::Load(written), lines, in.cluster.gpus, in.cluster.gpus_per_node, in.plan};
}

constexpr AccelerateCase kAccelerateGrid[] = {
    {"llama-3.1-8b", "dgx-h100", 8, 1, 0, false, Recompute::none, Precision::bf16},
    {"llama-3.1-8b", "dgx-h100", 16, 1, 3, false, Recompute::full, Precision::bf16},
    {"llama-3.1-8b", "dgx-h100", 16, 2, 2, false, Recompute::selective, Precision::bf16},
    {"llama-3.1-8b", "dgx-h100", 8, 1, 3, true, Recompute::full, Precision::bf16_pure},
    {"llama-3.1-70b", "dgx-h100", 64, 8, 3, false, Recompute::full, Precision::bf16},
    {"llama-3.1-70b", "dgx-h100", 64, 1, 3, true, Recompute::full, Precision::bf16},
    {"gpt3-175b", "dgx-a100", 1024, 8, 3, false, Recompute::full, Precision::bf16},
    {"qwen3-30b-a3b", "dgx-h100", 32, 1, 3, false, Recompute::full, Precision::bf16},
    {"deepseek-v3", "h800-deepseek", 2048, 8, 3, false, Recompute::full, Precision::fp8},
};

}  // namespace

TEST_CASE("accelerate conformance: every grid config passes accelerate's own start-up rules") {
  for (const AccelerateCase& g : kAccelerateGrid) {
    const EmitInputs in = accelerate_inputs_of(g);
    const std::string model = g.model;
    CAPTURE(model);
    CAPTURE(g.gpus);
    CAPTURE(g.zero);
    const auto problems = accelerate_problems(in);
    REQUIRE_MESSAGE(problems.empty(), problems.front().message);
    const auto failed = failures(launch_of(in));
    CHECK_MESSAGE(failed.empty(), test::joined(failed));
  }
}

TEST_CASE("accelerate conformance: the plans `emit --pick recommended|fastest` takes pass too") {
  // `--pick` takes the plan file's recommended or fastest plan: the ladder's pick and the
  // search's (planning.hpp), here found for FSDP as `plan --framework fsdp` finds them.
  struct Picked {
    const char* model;
    const char* cluster;
    int gpus;
  };
  for (const Picked& c : {Picked{"llama-3.1-8b", "dgx-h100", 16},
                          Picked{"llama-3.1-70b", "dgx-h100", 64},
                          Picked{"qwen3-30b-a3b", "dgx-h100", 32}}) {
    const ModelSpec m = load_model(c.model);
    const ClusterSpec cluster = test::cluster(c.gpus, c.cluster);
    const TrainingSpec t = fsdp_training(m, Precision::bf16);
    const PlanningResult r = plan_cluster(m, t, cluster, {});
    REQUIRE(r.recommended() != nullptr);
    REQUIRE(r.fastest() != nullptr);
    for (const ParallelPlan& p : {r.recommended()->plan.plan, r.fastest()->plan}) {
      const std::string model = c.model, plan = describe(p);
      CAPTURE(model);
      CAPTURE(plan);
      const EmitInputs in = inputs_for(m, cluster, t, p);
      const auto problems = accelerate_problems(in);
      REQUIRE_MESSAGE(problems.empty(), problems.front().message);
      const auto failed = failures(launch_of(in));
      CHECK_MESSAGE(failed.empty(), test::joined(failed));
    }
  }
}

TEST_CASE("accelerate conformance: each rule fails on a config broken its way") {
  const EmitInputs zero3 =
      accelerate_inputs_of(kAccelerateGrid[1]);  // 16 GPUs on two machines, FSDP2 ZeRO-3
  const EmitInputs tp2 = accelerate_inputs_of(kAccelerateGrid[2]);  // ZeRO-2 with tensor parallel 2
  struct Broken {
    const char* rule;
    const EmitInputs* in;
    std::function<void(AccelerateLaunch&)> breaks;
  };
  const Broken cases[] = {
      {"config-keys", &zero3, [](AccelerateLaunch& l) { l.config["fsdp"] = true; }},
      {"distributed-type", &zero3, [](AccelerateLaunch& l) { l.config.remove("distributed_type"); }},
      {"distributed-type", &zero3, [](AccelerateLaunch& l) { l.config["distributed_type"] = "GPU"; }},
      {"mixed-precision", &zero3, [](AccelerateLaunch& l) { l.config["mixed_precision"] = "bf8"; }},
      {"processes", &zero3, [](AccelerateLaunch& l) { l.config["num_processes"] = 8; }},
      {"processes", &zero3, [](AccelerateLaunch& l) { l.config["num_machines"] = 4; }},
      {"machines", &zero3, [](AccelerateLaunch& l) { l.launch = {"accelerate launch train.py"}; }},
      {"fsdp-version", &zero3,
       [](AccelerateLaunch& l) { l.config["fsdp_config"].remove("fsdp_version"); }},
      {"fsdp-keys", &zero3,
       [](AccelerateLaunch& l) { section(l, "fsdp_config")["fsdp_offload_optimizer"] = true; }},
      {"fsdp-booleans", &zero3,
       [](AccelerateLaunch& l) { section(l, "fsdp_config")["fsdp_activation_checkpointing"] = "2"; }},
      {"fsdp2-reshard", &zero3,
       [](AccelerateLaunch& l) {
         section(l, "fsdp_config")["fsdp_reshard_after_forward"] = "FULL_SHARD";
       }},
      {"fsdp2-reshard", &zero3,
       [](AccelerateLaunch& l) { section(l, "fsdp_config")["fsdp_reshard_after_forward"] = false; }},
      {"fsdp-state-dict", &zero3,
       [](AccelerateLaunch& l) {
         section(l, "fsdp_config")["fsdp_state_dict_type"] = "LOCAL_STATE_DICT";
       }},
      {"fsdp-wrap", &zero3,
       [](AccelerateLaunch& l) { l.config["fsdp_config"].remove("fsdp_auto_wrap_policy"); }},
      {"fsdp-offload", &zero3,
       [](AccelerateLaunch& l) { section(l, "fsdp_config")["fsdp_offload_params"] = true; }},
      {"ram-efficient-loading", &zero3,
       [](AccelerateLaunch& l) { section(l, "fsdp_config")["fsdp_sync_module_states"] = false; }},
      {"parallelism-config", &tp2,
       [](AccelerateLaunch& l) { l.config["parallelism_config"]["parallelism_config_tp_size"] = 4; }},
      {"parallelism-config", &tp2, [](AccelerateLaunch& l) { l.config.remove("parallelism_config"); }},
      {"parallelism-config", &tp2,
       [](AccelerateLaunch& l) { l.config["parallelism_config"]["tp_size"] = 2; }},
      {"deepspeed-config-file", &zero3,
       [](AccelerateLaunch& l) {
         l.config["deepspeed_config"]["deepspeed_config_file"] = "ds.json";
         l.config["deepspeed_config"]["zero_stage"] = 3;
       }},
  };
  for (const Broken& b : cases) {
    const std::string rule = b.rule;
    CAPTURE(rule);
    AccelerateLaunch l = launch_of(*b.in);
    REQUIRE(failures(l).empty());
    b.breaks(l);
    const auto failed = failures(l);
    const bool named = std::any_of(failed.begin(), failed.end(), [&](const std::string& f) {
      return f.rfind(rule + ":", 0) == 0;
    });
    CHECK_MESSAGE(named, test::joined(failed));
  }
}
