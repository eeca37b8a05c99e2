// A DeepSpeed config JSON read back (deepspeed/runtime/config.py, zero/config.py): batch sizes,
// ZeRO stage and offload, precision; the degrees DeepSpeed's JSON cannot hold (tensor and
// pipeline parallel live in the training script) from shardplan's own "_shardplan" block when the
// file has one, else from the flags.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "read_parts.hpp"

namespace shardplan::config {
namespace {

using nlohmann::json;

// Top-level keys DeepSpeed reads that do not change memory or time as shardplan prices them.
const std::set<std::string>& known_top_keys() {
  static const std::set<std::string> table = {
      "steps_per_print", "gradient_clipping", "wall_clock_breakdown", "checkpoint", "scheduler",
      "prescale_gradients", "gradient_predivide_factor", "communication_data_type",
      "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "flops_profiler",
      "tensorboard", "wandb", "csv_monitor", "comms_logger", "activation_checkpointing", "aio",
      "elasticity", "compile", "amp", "data_types", "dump_state", "memory_breakdown",
      "sparse_gradients", "seq_parallel_communication_data_type", "timers", "_shardplan",
      "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
      "zero_optimization", "bf16", "fp16", "optimizer", "pipeline", "data_efficiency",
      "curriculum_learning", "monitor_config", "nebula", "autotuning", "quantize_training",
      "compression_training", "eigenvalue", "progressive_layer_drop", "weight_quantization",
      "hybrid_engine", "torch_autocast", "graph_harvesting", "use_data_before_expert_parallelism",
      "disable_allgather", "fp16_auto_cast", "load_universal_checkpoint", "gradient_accumulation_dtype",
      "tensor_parallel", "bfloat16", "zero_optimization_stage", "sequence_parallel_size",
      "expert_parallel",
  };
  return table;
}

// zero_optimization keys (DeepSpeedZeroConfig, which forbids any other: an unknown one stops
// deepspeed.initialize, so it is refused here too).
const std::set<std::string>& zero_keys() {
  static const std::set<std::string> table = {
      "stage", "contiguous_gradients", "reduce_scatter", "reduce_bucket_size",
      "use_multi_rank_bucket_allreduce", "allgather_partitions", "allgather_bucket_size",
      "overlap_comm", "load_from_fp32_weights", "elastic_checkpoint", "offload_param",
      "offload_optimizer", "sub_group_size", "cpu_offload_param", "cpu_offload_use_pin_memory",
      "cpu_offload", "prefetch_bucket_size", "stage3_prefetch_bucket_size", "param_persistence_threshold",
      "stage3_param_persistence_threshold", "model_persistence_threshold",
      "stage3_model_persistence_threshold", "max_live_parameters", "stage3_max_live_parameters",
      "max_reuse_distance", "stage3_max_reuse_distance", "gather_16bit_weights_on_model_save",
      "stage3_gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
      "module_granularity_threshold", "use_all_reduce_for_fetch_params",
      "stage3_use_all_reduce_for_fetch_params", "ignore_unused_parameters", "legacy_stage1",
      "round_robin_gradients", "zero_hpz_partition_size", "zero_quantized_weights",
      "zero_quantized_nontrainable_weights", "zero_quantized_gradients", "zeropp_loco_param",
      "mics_shard_size", "mics_hierarchical_params_gather", "memory_efficient_linear",
      "pipeline_loading_checkpoint", "override_module_apply", "log_trace_cache_warnings",
      "save_muon_momentum_buffer_in_memory", "cpu_offload_params",
  };
  return table;
}

std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// "auto" is Hugging Face Trainer's placeholder: the Trainer fills it, so it is a default here.
bool is_auto(const json& v) {
  return v.is_string() && v.get<std::string>() == "auto";
}

std::string whole(Builder& b, const json& j, const std::string& key) {
  if (!j.is_number_integer()) b.refuse(key, "'" + text_of(j) + "' is not a whole number");
  return std::to_string(j.get<long long>());
}

// A parallel degree: a whole number of ranks, at least one.
std::string parallel_degree(Builder& b, const json& j, const std::string& key) {
  std::string degree = whole(b, j, key);
  if (std::stoll(degree) < 1) b.refuse(key, "must be at least 1");
  return degree;
}

// The batch identity train = micro x accumulation x dp (runtime/config.py
// _batch_assertion): all three give the data-parallel degree.
void batch(const json& j, Builder& b) {
  static constexpr const char* kTrain = "train_batch_size";
  static constexpr const char* kMicro = "train_micro_batch_size_per_gpu";
  static constexpr const char* kAccum = "gradient_accumulation_steps";
  auto given = [&](const char* k) { return j.contains(k) && !is_auto(j.at(k)); };
  // "auto" is filled by the Hugging Face Trainer from its own arguments
  // (integrations/deepspeed.py trainer_config_process): the file does not say.
  for (const char* k : {kTrain, kMicro, kAccum}) {
    if (j.contains(k) && is_auto(j.at(k))) {
      b.note(fmt::format("{} is \"auto\": the Hugging Face Trainer fills it from its "
                         "--per_device_train_batch_size / --gradient_accumulation_steps; "
                         "--micro-batch and --global-batch give it here",
                         k));
    }
  }
  if (given(kMicro)) {
    b.set("--micro-batch", whole(b, j.at(kMicro), kMicro), kMicro);
  } else if (!j.contains(kMicro)) {
    b.note_default(fmt::format("no {}: micro-batch 1", kMicro));
  }
  if (given(kTrain)) b.set("--global-batch", whole(b, j.at(kTrain), kTrain), kTrain);
  const long long micro = given(kMicro) ? j.at(kMicro).get<long long>() : 1;
  const long long accum = given(kAccum) ? std::stoll(whole(b, j.at(kAccum), kAccum)) : 0;
  if (given(kTrain) && given(kAccum)) {
    const long long train = j.at(kTrain).get<long long>();
    if (micro < 1 || accum < 1 || train % (micro * accum) != 0) {
      b.refuse(kTrain, fmt::format("{} is not {} x {} x a data-parallel size (DeepSpeed asserts "
                                   "train_batch_size = micro x accumulation x dp)",
                                   train, micro, accum));
    }
    b.set("--dp", std::to_string(train / (micro * accum)), fmt::format("{} / ({} x {})", kTrain, kMicro, kAccum));
  } else if (!given(kTrain)) {
    b.config().default_accumulation = accum > 0 ? static_cast<int>(accum) : 1;
  }
}

void zero(const json& j, Builder& b) {
  if (!j.contains("zero_optimization")) {
    b.launcher_default("--zero", "0", "no zero_optimization: ZeRO stage 0, DeepSpeed's default");
    return;
  }
  const json& z = j.at("zero_optimization");
  if (!z.is_object()) b.refuse("zero_optimization", "is not an object");
  for (const auto& [key, value] : z.items()) {
    if (zero_keys().count(key) == 0) {
      b.refuse("zero_optimization." + key,
               "is not a DeepSpeed ZeRO key (DeepSpeedZeroConfig refuses unknown keys)");
    }
  }
  // Read wide, checked before it narrows: a stage of 10^12 is refused, not an out_of_range.
  const long long stage_read =
      z.contains("stage") ? std::stoll(whole(b, z.at("stage"), "zero_optimization.stage")) : 0;
  if (stage_read < 0 || stage_read > 3)
    b.refuse("zero_optimization.stage", fmt::format("{} is not 0-3", stage_read));
  const int stage = static_cast<int>(stage_read);
  b.set("--zero", std::to_string(stage), "zero_optimization.stage");
  // zero/config.py: overlap_comm defaults to true for stage 3 and false below it.
  const bool overlap = z.contains("overlap_comm") ? z.at("overlap_comm") == true : stage == 3;
  if (!overlap) {
    b.launcher_default("--no-overlap", "true",
                       z.contains("overlap_comm")
                           ? "zero_optimization.overlap_comm false: gradient reduction waits for "
                             "the backward pass"
                           : "no zero_optimization.overlap_comm: DeepSpeed does not overlap "
                             "below stage 3 (its default)");
  }
  std::string offload, to;
  for (const auto& [key, what, legacy] :
       {std::tuple{"offload_optimizer", "optimizer", "cpu_offload"},
        std::tuple{"offload_param", "params", "cpu_offload_param"}}) {
    // zero/config.py: the deprecated cpu_offload / cpu_offload_param true stand for
    // offload_optimizer / offload_param on the cpu (DeepSpeed 0.3-0.6 also took the plural
    // cpu_offload_params).
    const bool old_key = (z.contains(legacy) && z.at(legacy) == true) ||
                         (std::string(what) == "params" && z.contains("cpu_offload_params") &&
                          z.at("cpu_offload_params") == true);
    if (!old_key && (!z.contains(key) || !z.at(key).is_object() || !z.at(key).contains("device")))
      continue;
    const std::string device = old_key ? "cpu" : text_of(z.at(key).at("device"));
    if (device == "auto") {
      b.note(fmt::format("zero_optimization.{}.device is \"auto\"; --offload says whether it "
                         "offloads",
                         key));
      continue;
    }
    if (device == "none") continue;
    if (device != "cpu" && device != "nvme") {
      b.refuse(fmt::format("zero_optimization.{}.device", key),
               "'" + device + "' is not none, cpu or nvme");
    }
    if (!offload.empty()) offload += ',';
    offload += what;
    if (!to.empty() && to != device) {
      b.refuse(fmt::format("zero_optimization.{}.device", key),
               fmt::format("shardplan prices one offload target; the optimizer and the "
                           "parameters go to {} and {}",
                           to, device));
    }
    to = device;
  }
  if (!offload.empty()) {
    b.set("--offload", offload, "zero_optimization.offload_*");
    b.set("--offload-to", to, "zero_optimization.offload_*.device");
  }
}

void precision_and_optimizer(const json& j, Builder& b) {
  auto on = [&](const char* k) {
    return j.contains(k) && j.at(k).is_object() && j.at(k).contains("enabled") &&
           j.at(k).at("enabled") == true;
  };
  auto automatic = [&](const char* k) {
    return j.contains(k) && j.at(k).is_object() && j.at(k).contains("enabled") &&
           is_auto(j.at(k).at("enabled"));
  };
  if (!on("bf16") && !on("fp16") && (automatic("bf16") || automatic("fp16"))) {
    b.note("bf16.enabled / fp16.enabled are \"auto\": the Hugging Face Trainer sets them from "
           "its --bf16 / --fp16; --precision gives it here (default bf16)");
  } else if (on("bf16") || on("bfloat16")) {
    b.set("--precision", "bf16", "bf16.enabled");
  } else if (on("fp16")) {
    b.set("--precision", "fp16", "fp16.enabled");
  } else {
    b.launcher_default("--precision", "fp32", "neither bf16 nor fp16 enabled: DeepSpeed trains "
                                              "in fp32");
  }
  if (j.contains("optimizer") && j.at("optimizer").contains("type")) {
    const std::string type = text_of(j.at("optimizer").at("type"));
    const std::string lower = [&] {
      std::string s;
      for (char c : type) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    }();
    // Adam, AdamW and their fused / CPU / 1-bit kinds, and LAMB, keep two moments per parameter.
    const bool two_moments = lower == "adam" || lower == "adamw" || lower == "cpuadam" ||
                             lower == "fusedadam" || lower == "onebitadam" || lower == "lamb" ||
                             lower == "onebitlamb";
    if (two_moments) {
      b.set("--optimizer", "adamw", "optimizer.type");
    } else if (lower == "sgd") {
      b.set("--optimizer", "sgd", "optimizer.type");
    } else {
      b.note_default("optimizer.type " + type + ": priced as AdamW (two moments per parameter)");
    }
  } else {
    b.note_default("no optimizer section: the script builds the optimizer; priced as AdamW");
  }
  if (j.contains("pipeline") && j.at("pipeline").is_object()) {
    const json& p = j.at("pipeline");
    if (p.contains("activation_checkpoint_interval") &&
        p.at("activation_checkpoint_interval").is_number_integer() &&
        p.at("activation_checkpoint_interval").get<long long>() > 0)
      b.set("--recompute", "full", "pipeline.activation_checkpoint_interval");
    if (p.contains("stages") && !is_auto(p.at("stages")))
      b.set("--pp", whole(b, p.at("stages"), "pipeline.stages"), "pipeline.stages");
  }
  // DeepSpeed AutoTP training (runtime/tensor_parallel/config.py): tensor_parallel.autotp_size.
  if (j.contains("tensor_parallel") && j.at("tensor_parallel").is_object()) {
    const json& t = j.at("tensor_parallel");
    for (const char* k : {"autotp_size", "tp_size"}) {
      if (t.contains(k) && !is_auto(t.at(k))) {
        b.set("--tp", whole(b, t.at(k), std::string("tensor_parallel.") + k),
              std::string("tensor_parallel.") + k);
        break;
      }
    }
  }
}

// DeepSpeed-Ulysses (ALST) sequence parallelism: runtime/config.py DeepSpeedConfig takes the
// data-parallel world as world / sequence_parallel_size, so the batch identity above already gave
// the data-parallel degree; the heads are split over the sequence-parallel ranks.
void sequence_parallel(const json& j, Builder& b) {
  static constexpr const char* kKey = "sequence_parallel_size";
  if (!j.contains(kKey) || is_auto(j.at(kKey))) return;
  const std::string degree = parallel_degree(b, j.at(kKey), kKey);
  if (degree == "1") return;
  b.set("--cp", degree, kKey);
  b.set("--cp-kind", "ulysses", kKey + std::string(" (DeepSpeed-Ulysses)"));
}

// DeepSpeed's AutoEP (deepspeed/module_inject/auto_ep_config.py parse_autoep_config, read by
// runtime/config.py get_expert_parallel_config): an "expert_parallel" block whose autoep_size is
// the expert-parallel group, carved out of the data-parallel ranks (world % autoep_size == 0),
// and, where the version has it, expert_tensor_parallel_size. Off unless "enabled" is true.
void expert_parallel(const json& j, Builder& b) {
  static constexpr const char* kKey = "expert_parallel";
  if (!j.contains(kKey)) return;
  const json& e = j.at(kKey);
  if (!e.is_object())
    b.refuse(kKey, "must be an object such as {\"enabled\": true, \"autoep_size\": 8}");
  if (e.contains("enabled") && !e.at("enabled").is_boolean())
    b.refuse("expert_parallel.enabled", "'" + text_of(e.at("enabled")) + "' is not true or false");
  if (!e.value("enabled", false)) return;
  const std::pair<const char*, const char*> degrees[] = {
      {"autoep_size", "--ep"}, {"expert_tensor_parallel_size", "--expert-tp"}};
  for (const auto& [key, flag] : degrees) {
    const std::string at = std::string(kKey) + "." + key;
    if (!e.contains(key) || is_auto(e.at(key))) continue;
    const std::string degree = parallel_degree(b, e.at(key), at);
    if (degree != "1") b.set(flag, degree, at);
  }
}

// shardplan's own block: what DeepSpeed's keys cannot say (tp, pp, schedule, layout, GPUs).
void shardplan_block(const json& j, Builder& b) {
  if (!j.contains("_shardplan") || !j.at("_shardplan").contains("plan")) {
    b.note_default("tensor and pipeline parallelism live in the training script, not the JSON: "
                   "tp 1 and pp 1 unless --tp/--pp say otherwise");
    return;
  }
  const json& p = j.at("_shardplan").at("plan");
  const std::string at = "_shardplan.plan.";
  const std::pair<const char*, const char*> degrees[] = {
      {"tp", "--tp"}, {"pp", "--pp"}, {"cp", "--cp"}, {"ep", "--ep"}, {"expert_tp", "--expert-tp"},
      {"interleave", "--interleave"}, {"first_stage_layers", "--first-stage-layers"},
      {"last_stage_layers", "--last-stage-layers"}, {"gpus", "--gpus"},
      {"gpus_per_node", "--gpus-per-node"}};
  for (const auto& [key, flag] : degrees) {
    if (p.contains(key) && !p.at(key).is_null()) b.set(flag, whole(b, p.at(key), at + key), at + key);
  }
  if (p.contains("schedule")) b.set("--schedule", text_of(p.at("schedule")), at + "schedule");
  if (p.value("sequence_parallel", false)) b.set("--sequence-parallel", "true", at + "sequence_parallel");
  if (p.contains("recompute") && b.value_of("--recompute").empty())
    b.set("--recompute", text_of(p.at("recompute")), at + "recompute");
  // DeepSpeed runs what its own keys say; the block only fills what they cannot hold.
  if (p.contains("zero") && p.at("zero").is_number_integer() &&
      std::to_string(p.at("zero").get<int>()) != b.value_of("--zero") &&
      !b.value_of("--zero").empty()) {
    b.note_default(fmt::format("_shardplan.plan.zero {} differs from zero_optimization.stage {}; "
                               "DeepSpeed runs the stage, so the plan does",
                               p.at("zero").get<int>(), b.value_of("--zero")));
  }
}

}  // namespace

LauncherConfig read_deepspeed(const std::string& text, const std::string& path) {
  Builder b(LauncherFormat::deepspeed, path, "deepspeed");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    b.refuse("JSON", e.what());
  }
  if (!j.is_object()) b.refuse("JSON", "is not a JSON object (a DeepSpeed config is one)");
  if (j.contains("model_type") || j.contains("architectures") ||
      (j.contains("num_hidden_layers") && j.contains("hidden_size"))) {
    b.refuse("model_type", "this is a Hugging Face model config.json, not a DeepSpeed config: give "
                           "it as --model FILE, and the launcher's config to --from");
  }
  std::vector<std::string> plan_keys = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                        "gradient_accumulation_steps", "zero_optimization"};
  for (const auto& [key, value] : j.items())
    if (known_top_keys().count(key) == 0) b.unknown(key, plan_keys);
  try {
    batch(j, b);
    zero(j, b);
    sequence_parallel(j, b);
    expert_parallel(j, b);
    precision_and_optimizer(j, b);
    shardplan_block(j, b);
    // runtime/engine.py: bf16 without ZeRO runs BF16_Optimizer (runtime/bf16_optimizer.py),
    // which shards the fp32 master weights and optimizer state over the data-parallel ranks as
    // ZeRO-1 does.
    if (b.value_of("--zero") == "0" && b.value_of("--precision") == "bf16") {
      b.set("--zero", "1", "zero_optimization.stage 0 with bf16 (DeepSpeed's BF16_Optimizer)");
      b.note("ZeRO stage 0 with bf16: DeepSpeed runs its BF16_Optimizer, which shards the fp32 "
             "master weights and optimizer state over the data-parallel ranks: priced as ZeRO-1");
    }
  } catch (const json::exception& e) {
    // A section of the wrong type ("pipeline": 3, a string where a number goes).
    b.refuse("JSON", std::string("a value of the wrong type: ") + e.what());
  }
  return b.take();
}

}  // namespace shardplan::config
