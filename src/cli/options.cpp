// Turns the shared planning flags into specs: presets and files through profiles, numbers
// through the unit parsers, and every rule of a runnable plan through check_plan.
#include "options.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <iomanip>
#include <iostream>

#include "shardplan/describe.hpp"
#include "shardplan/error.hpp"
#include "shardplan/files.hpp"
#include "shardplan/fitted_profile.hpp"
#include "shardplan/json_out.hpp"
#include "shardplan/model.hpp"
#include "shardplan/names.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/table.hpp"
#include "shardplan/trace.hpp"
#include "shardplan/units.hpp"
#include "shardplan/version.hpp"

namespace shardplan::cli {
namespace {

int parse_zero(const std::string& text) {
  if (text.empty()) return 0;
  if (text.size() != 1 || text[0] < '0' || text[0] > '3')
    throw InputError("--zero", "'" + text + "' is not a ZeRO stage; use 0, 1, 2 or 3");
  return text[0] - '0';
}

bool any_architecture_flag(const PlanningOptions& o) {
  return !(o.layers.empty() && o.hidden.empty() && o.heads.empty() && o.kv_heads.empty() &&
           o.ffn_hidden.empty() && o.vocab.empty() && o.mlp.empty() && o.experts.empty() &&
           o.norm.empty() && o.positions.empty() && o.embeddings.empty() && o.bias.empty());
}

// GPT-3-style defaults for a model described by flags alone (Brown et al. 2020: 4h GeLU MLP,
// multi-head attention, learned positions, tied embeddings, biases, LayerNorm, dropout), with
// Megatron-LM's padded GPT-2 vocabulary of 51,200.
ModelSpec gpt_style() {
  ModelSpec m;
  m.name = "GPT-style model from flags";
  m.source = "--layers/--hidden/--heads (GPT-3 conventions: 4h GeLU MLP, vocab 51200)";
  m.vocab = 51200;
  m.seq_len = 2048;
  m.max_positions = 2048;
  return m;
}

// The schedule and the stage layout: interleaved 1F1B when --interleave is given alone, two
// chunks per device when a schedule needs them and --interleave is not given.
void resolve_pipeline(const PlanningOptions& o, ParallelPlan& p) {
  auto layers = [](const std::string& text, const char* field) {
    return text.empty() ? -1 : text == "0" ? 0 : parse_int(text, field, 100000);
  };
  p.first_stage_layers = layers(o.first_stage_layers, "--first-stage-layers");
  p.last_stage_layers = layers(o.last_stage_layers, "--last-stage-layers");
  if (o.schedule.empty()) {
    p.schedule = schedule_of(p);
    return;
  }
  p.schedule = parse_schedule(o.schedule, "--schedule");
  const ScheduleChunks chunks = schedule_row(p.schedule).chunks;
  const bool two_chunks = chunks == ScheduleChunks::at_least_two || chunks == ScheduleChunks::two_v;
  if (o.interleave.empty() && two_chunks) p.interleave = 2;
  if (p.schedule == Schedule::one_f_one_b && p.interleave > 1) {
    throw InputError("--schedule",
                     "1f1b runs one model chunk per device; with --interleave use --schedule "
                     "interleaved (or zb-h1)");
  }
}

}  // namespace

Offload parse_offload(const std::string& list, const std::string& to,
                      const std::string& activation_layers) {
  Offload off;
  // At most a model's layers; the rule table checks N against the plan's stages.
  off.activation_layers =
      parse_int_or(activation_layers, "--offload-activation-layers", 0, 100'000);
  if (list != "none") {
    for (const std::string& part : split_list(list)) {
      if (part == "optimizer") {
        off.optimizer = true;
      } else if (part == "params") {
        off.params = true;
      } else if (part == "activations") {
        off.activations = true;
      } else {
        throw InputError("--offload", "'" + part +
                                          "' is not something to offload; use a comma list of "
                                          "optimizer, params, activations, or none");
      }
    }
  }
  if (!to.empty()) {
    if (!off.any())
      throw InputError("--offload-to",
                       "needs --offload optimizer|params|activations or "
                       "--offload-activation-layers N");
    off.to = parse_offload_target(to, "--offload-to");
  }
  return off;
}

void add_json_option(CLI::App& app, PlanningOptions& o) {
  app.add_flag("--json", o.json, "Print JSON instead of a table");
}

ModelSpec resolve_model(const PlanningOptions& o) {
  ModelSpec m;
  if (!o.model.empty() && !o.params.empty()) {
    throw InputError("--params", "give either --model or --params, not both");
  }
  if (!o.model.empty()) {
    m = load_model(o.model, "--model");
  } else if (!o.params.empty()) {
    if (any_architecture_flag(o)) {
      throw InputError("--params",
                       "--params describes a model by its count alone; drop it to "
                       "describe the architecture with --layers/--hidden/--heads");
    }
    m.params_only = parse_count(o.params, "--params");
    if (m.params_only > 1e15)
      throw InputError("--params", "more than 10^15 parameters is not a model");
    m.name = format_count(m.params_only) + "-parameter model";
    m.source = "--params " + o.params;
    return m;
  } else if (any_architecture_flag(o)) {
    m = gpt_style();
    if (o.layers.empty() || o.hidden.empty()) {
      throw InputError(o.layers.empty() ? "--layers" : "--hidden",
                       "a model described by flags needs at least --layers and --hidden");
    }
  } else {
    throw InputError("--model",
                     "no model given: use --model NAME|config.json (see `shardplan list "
                     "models`), --params 7B, or --layers/--hidden/--heads");
  }
  const bool from_flags = o.model.empty();
  const int max_dim = 10'000'000;
  if (!o.layers.empty()) m.layers = parse_int(o.layers, "--layers", 100000);
  if (!o.hidden.empty()) m.hidden = parse_int(o.hidden, "--hidden", max_dim);
  if (!o.heads.empty()) {
    m.heads = parse_int(o.heads, "--heads", max_dim);
  } else if (from_flags) {
    m.heads = std::max(1, m.hidden / 128);  // 128-wide heads, as GPT-3 and Llama use
  }
  if (!o.kv_heads.empty()) {
    m.kv_heads = parse_int(o.kv_heads, "--kv-heads", max_dim);
  } else if (from_flags || !o.heads.empty()) {
    m.kv_heads = m.heads;
  }
  if (from_flags || !o.hidden.empty() || !o.heads.empty()) {
    if (m.hidden % m.heads != 0) {
      throw InputError("--heads",
                       fmt::format("{} heads do not divide hidden size {}", m.heads, m.hidden));
    }
    m.head_dim = m.hidden / m.heads;
  }
  if (!o.ffn_hidden.empty()) {
    m.ffn_hidden = parse_int(o.ffn_hidden, "--ffn-hidden", 100'000'000);
  } else if (from_flags) {
    m.ffn_hidden = 4 * m.hidden;
  }
  if (!o.vocab.empty()) m.vocab = parse_int(o.vocab, "--vocab", 100'000'000);
  if (!o.mlp.empty()) m.mlp = parse_mlp(o.mlp, "--mlp");
  if (!o.norm.empty()) m.norm = parse_norm(o.norm, "--norm");
  if (!o.positions.empty()) m.positions = parse_positions(o.positions, "--positions");
  if (!o.embeddings.empty()) {
    if (o.embeddings != "tied" && o.embeddings != "untied")
      throw InputError("--embeddings", "'" + o.embeddings + "' is not tied or untied");
    m.tied_embeddings = o.embeddings == "tied";
  }
  if (!o.bias.empty()) {
    if (o.bias != "all" && o.bias != "qkv" && o.bias != "none")
      throw InputError("--bias", "'" + o.bias + "' is not all, qkv or none");
    m.qkv_bias = o.bias != "none";
    m.out_bias = m.mlp_bias = o.bias == "all";
  }
  if (!o.experts.empty()) m.experts = parse_int(o.experts, "--experts", 100000);
  if (!o.top_k.empty()) m.experts_per_token = parse_int(o.top_k, "--top-k", 100000);
  if (m.experts > 0 && m.experts_per_token == 0) m.experts_per_token = 2;
  if (m.experts == 1) m.experts = 0;
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    throw InputError(
        "--kv-heads",
        fmt::format("{} key/value heads must divide the {} attention heads", m.kv_heads, m.heads));
  }
  if (m.experts > 0 && m.experts_per_token > m.experts) {
    throw InputError("--top-k", fmt::format("{} experts per token but only {} experts",
                                            m.experts_per_token, m.experts));
  }
  if (m.has_block_pattern()) {
    // A block pattern names each layer: its count and its MoE blocks are the pattern's.
    if (static_cast<int>(m.block_pattern.size()) != m.layers) {
      throw InputError("--layers", fmt::format("{} lays out its {} layers by its block pattern "
                                               "(Mamba-2, attention, MLP and MoE blocks); "
                                               "--layers cannot change that count",
                                               m.name, m.block_pattern.size()));
    }
    if ((m.block_pattern.find('E') != std::string::npos) != m.is_moe()) {
      throw InputError("--experts", fmt::format("{}'s MoE blocks are its block pattern's; "
                                                "--experts can change their experts, not add or "
                                                "remove them",
                                                m.name));
    }
  }
  if (any_architecture_flag(o) && !from_flags) m.source += " with flag overrides";
  for (const std::string& note : m.notes)
    std::fprintf(stderr, "shardplan: note: %s\n", note.c_str());
  return m;
}

// --headroom: "10%" of the device, or a size with its unit ("8GiB"; a bare number would be bytes,
// which nobody means). At least 0 and less than the device.
double parse_headroom(const std::string& text, const GpuSpec& gpu) {
  const std::string field = "--headroom";
  double bytes = 0;
  if (!text.empty() && text.back() == '%') {
    const double share = parse_number(text.substr(0, text.size() - 1), field);
    if (!(share >= 0 && share < 100)) {
      throw InputError(field, fmt::format("'{}' must be a share from 0% up to (not including) "
                                          "100% of the device",
                                          text));
    }
    bytes = share / 100 * gpu.memory_bytes;
  } else {
    if (text.find_first_not_of("0123456789.eE+- ") == std::string::npos) {
      throw InputError(field, fmt::format("'{}' has no unit: give a size (8GiB, 10GB) or a share "
                                          "of the device (10%)",
                                          text));
    }
    bytes = parse_bytes(text, field);
  }
  if (!(bytes >= 0 && bytes < gpu.memory_bytes)) {
    throw InputError(field, fmt::format("'{}' must be at least 0 and less than the {}'s {}", text,
                                        gpu.name, format_gib(gpu.memory_bytes)));
  }
  return bytes;
}

ClusterSpec resolve_cluster(const PlanningOptions& o, int default_gpus) {
  ClusterOptions c;
  c.cluster = o.cluster;
  c.gpu = o.gpu;
  c.intra = o.intra;
  c.inter = o.inter;
  c.link = o.link;
  c.gpus = o.gpus.empty() ? default_gpus : parse_int(o.gpus, "--gpus", 10'000'000);
  c.gpus_per_node = parse_int_or(o.gpus_per_node, "--gpus-per-node", 0);
  c.gpus_per_domain = parse_int_or(o.gpus_per_domain, "--gpus-per-domain", 0, 100'000);
  c.nics_per_node = parse_int_or(o.nics_per_node, "--nics-per-node", 0);
  if (!o.link.empty() && (!o.intra.empty() || !o.inter.empty())) {
    throw InputError("--link",
                     "--link sets one flat link; combine it with neither --intra nor --inter");
  }
  ClusterSpec built = build_cluster(c);
  if (!o.headroom.empty()) built.headroom_bytes = parse_headroom(o.headroom, built.gpu);
  if (built.gpus % built.gpus_per_node != 0) {
    throw InputError(o.gpus_per_node.empty() ? "--gpus" : "--gpus-per-node",
                     fmt::format("{} GPUs do not fill whole nodes of {}; use a --gpus that is a "
                                 "multiple of {}, or a --gpus-per-node that divides {}",
                                 built.gpus, built.gpus_per_node, built.gpus_per_node, built.gpus));
  }
  return built;
}

namespace {

// --moe-max-load, --moe-force-balance, --moe-fp8-dispatch, --moe-dispatcher.
void resolve_moe_training(const PlanningOptions& o, TrainingSpec& t) {
  if (!o.moe_max_load.empty() && o.moe_force_balance) {
    throw InputError("--moe-max-load",
                     "give --moe-max-load or --moe-force-balance, not both (forced balance is "
                     "a max-load of 1)");
  }
  if (!o.moe_max_load.empty()) {
    t.moe_max_load = parse_number(o.moe_max_load, "--moe-max-load");
    if (!(t.moe_max_load >= 1 && t.moe_max_load <= 64)) {
      throw InputError("--moe-max-load",
                       "'" + o.moe_max_load +
                           "' must be between 1 (every expert rank takes its even share) and "
                           "64 (the busiest takes 64 times it)");
    }
  }
  if (o.moe_force_balance) t.moe_max_load = 1;
  t.moe_fp8_dispatch = o.moe_fp8_dispatch;
  if (!o.moe_dispatcher.empty())
    t.moe_dispatcher = parse_moe_dispatcher(o.moe_dispatcher, "--moe-dispatcher");
  if (!o.cp_kind.empty()) t.context_parallel = parse_context_parallel(o.cp_kind, "--cp-kind");
}

}  // namespace

TrainingSpec resolve_training(const PlanningOptions& o, const ModelSpec& m) {
  TrainingSpec t = default_training(
      m, o.framework.empty() ? Framework::megatron : parse_framework(o.framework, "--framework"),
      o.precision.empty() ? Precision::bf16 : parse_precision(o.precision, "--precision"),
      !o.no_overlap, o.tp_comm_overlap);
  if (!o.optimizer.empty()) t.optimizer = parse_optimizer(o.optimizer, "--optimizer");
  if (!o.attention.empty()) t.attention = parse_attention(o.attention, "--attention");
  if (!o.seq_len.empty()) t.seq_len = parse_int(o.seq_len, "--seq-len", 100'000'000);
  if (!o.capacity_factor.empty()) {
    t.moe_capacity_factor = parse_number(o.capacity_factor, "--capacity-factor");
    if (!(t.moe_capacity_factor >= 1 && t.moe_capacity_factor <= 64)) {
      throw InputError("--capacity-factor",
                       "'" + o.capacity_factor +
                           "' must be between 1 and 64 (1.0 = exactly the "
                           "even share of tokens per expert); leave it out for dropless routing");
    }
  }
  resolve_moe_training(o, t);
  t.global_batch = parse_int_or(o.global_batch, "--global-batch", 0);  // 0: filled from the plan
  t.fp32_grads = o.fp32_grads;
  t.compiled_loss = o.compiled_loss;  // a profile that prices none: framework_compiled_loss
  t.full_vocab_loss = o.full_vocab_loss;
  if (!o.cuda_graphs.empty())         // a profile that prices none: framework_cuda_graphs
    t.cuda_graphs = parse_cuda_graphs(o.cuda_graphs, "--cuda-graphs");
  if (!o.fragmentation.empty()) {
    t.fragmentation = parse_number(o.fragmentation, "--fragmentation");
    if (!(t.fragmentation >= 0 && t.fragmentation <= 1)) {
      throw InputError("--fragmentation",
                       "'" + o.fragmentation + "' must be a share between 0 and 1");
    }
  }
  if (!o.grad_sync.empty()) t.grad_sync = parse_grad_sync(o.grad_sync, "--grad-sync");
  if (!o.tokens.empty()) t.tokens = parse_count(o.tokens, "--tokens");
  if (!o.gpu_hour_cost.empty()) {
    t.gpu_hour_cost = parse_number(o.gpu_hour_cost, "--gpu-hour-cost");
    if (!(t.gpu_hour_cost > 0 && t.gpu_hour_cost < 1e6)) {
      throw InputError("--gpu-hour-cost", "'" + o.gpu_hour_cost + "' must be a positive price");
    }
  }
  return t;
}

ParallelPlan plan_from_flags(const PlanningOptions& o) {
  ParallelPlan p = {.dp = parse_int_or(o.dp, "--dp", 0),
                    .tp = parse_int_or(o.tp, "--tp", 1),
                    .pp = parse_int_or(o.pp, "--pp", 1),
                    .cp = parse_int_or(o.cp, "--cp", 1),
                    .ep = parse_int_or(o.ep, "--ep", 1),
                    .etp = parse_int_or(o.expert_tp, "--expert-tp", 0),
                    .zero = parse_zero(o.zero),
                    .dp_shard = parse_int_or(o.dp_shard, "--dp-shard", 0),
                    .micro_batch = parse_int_or(o.micro_batch, "--micro-batch", 1),
                    .recompute = o.recompute.empty() ? Recompute::none
                                                     : parse_recompute(o.recompute, "--recompute"),
                    .recompute_modules =
                        o.recompute_modules.empty()
                            ? 0u
                            : parse_recompute_modules(o.recompute_modules, "--recompute-modules"),
                    .sequence_parallel = o.sequence_parallel,
                    .interleave = parse_int_or(o.interleave, "--interleave", 1),
                    .offload = parse_offload(o.offload, o.offload_to, o.offload_activation_layers),
                    .moe_a2a_overlap = o.moe_a2a_overlap};
  resolve_pipeline(o, p);
  return p;
}

void add_calibration_option(CLI::App& app, PlanningOptions& o) {
  app.add_option("--calibration", o.calibration,
                 "A calibration file `shardplan calibrate` wrote from a short run's log: the "
                 "stack's speed on that cluster, and the interval calibrated plans claim");
}

// --calibration FILE: the stack speed it fitted applied to the framework profile, and its
// interval (held-out residuals of calibrated predictions) in place of the class's, with the
// calibrating run's reach: a plan beyond it takes the beyond-corpus interval and says why.
bool apply_calibration(const PlanningOptions& o, Inputs& in, bool required) {
  if (o.calibration.empty()) return false;
  const FittedConstants fc =
      fitted_from_text(read_text_file(o.calibration, "--calibration"), o.calibration);
  FrameworkProfile& fw = in.training.framework;
  const std::string mine = "stack " + fw.name + " x " + in.cluster.gpu.accuracy_class;
  const auto calibrated_here =
      std::find_if(fc.constants.begin(), fc.constants.end(),
                   [&](const FittedConstant& c) { return c.name == mine; });
  const bool applies = calibrated_here != fc.constants.end();
  if (!applies && !required) return false;
  if (!applies) {
    std::string names;
    for (const FittedConstant& c : fc.constants) names += (names.empty() ? "" : ", ") + c.name;
    throw InputError("--calibration",
                     o.calibration + " calibrates " + names + "; this plan runs " + fw.name +
                         " on " + in.cluster.gpu.name + " (" + mine +
                         "): calibrate on a run of this stack and GPU class, or leave it out");
  }
  apply_fitted(fc, fw.name, fw.pricing);
  const bool moe = in.model.experts > 0;
  AccuracyClass calibrated;
  calibrated.gpu_class = in.cluster.gpu.accuracy_class;
  calibrated.moe = moe;
  calibrated.cases = fc.interval_cases;
  calibrated.groups = fc.interval_groups;
  calibrated.step_error_low = fc.interval_low;
  calibrated.step_error_high = fc.interval_high;
  calibrated.source = "calibrated: " + fc.interval_basis;
  calibrated.reach = fc.reach;
  std::erase_if(fw.accuracy, [&](const AccuracyClass& a) {
    return a.gpu_class == calibrated.gpu_class && a.moe == moe;
  });
  if (!fc.interval_basis.empty()) fw.accuracy.push_back(calibrated);
  in.notes.push_back(fmt::format("calibrated by {}: {} x {:.3f} ({})", o.calibration, mine,
                                 calibrated_here->multiplier,
                                 fc.run.empty() ? fc.source : fc.run));
  return true;
}

Inputs resolve_flag_inputs(const PlanningOptions& o) {
  Inputs in;
  in.model = resolve_model(o);
  ParallelPlan& p = in.plan;
  p = plan_from_flags(o);
  const int model_parallel = p.tp * p.pp * p.cp;
  const int dp_flag = p.dp;
  const int default_gpus = (dp_flag > 0 ? dp_flag : 1) * model_parallel;
  in.cluster = resolve_cluster(o, default_gpus);
  in.training = resolve_training(o, in.model);
  if (p.tp > 1 && !p.sequence_parallel && in.training.framework.caps.sequence_parallel_always) {
    p.sequence_parallel = true;
    in.notes.push_back(fmt::format("sequence parallel: {} runs it whenever tp > 1 (its tensor "
                                   "parallel plan shards the norms and residual stream too)",
                                   in.training.framework.name));
  }
  PlanRules rules;
  rules.allow_tp_across_nodes = o.allow_tp_across_nodes;
  if (dp_flag == 0) {
    p.dp = 1;  // one replica until the cluster sets it
    if (in.cluster.gpus % model_parallel != 0) {
      // A degree the model cannot take (tp 3 with 32 heads) is the better message.
      ClusterSpec one_replica = in.cluster;
      one_replica.gpus = model_parallel;
      TrainingSpec any_batch = in.training;
      any_batch.global_batch = p.micro_batch;
      const auto model_problems = plan_problems(p, {in.model, any_batch, one_replica, rules});
      if (!model_problems.empty()) {
        throw InputError(model_problems.front().field, model_problems.front().message);
      }
      throw InputError(
          "--gpus", fmt::format("{} GPUs do not split into tp {} x pp {} x cp {} = {}; "
                                "use a multiple of {}",
                                in.cluster.gpus, p.tp, p.pp, p.cp, model_parallel, model_parallel));
    }
    p = plan_over(in.cluster.gpus, p);
  }
  fill_default_global_batch(in, p.dp * p.micro_batch);
  note_precision(in);
  note_cluster(in);
  require_runnable(p, {in.model, in.training, in.cluster, rules});
  return in;
}

void note_precision(Inputs& in) {
  if (const std::string w = precision_warning(in.training.precision); !w.empty())
    in.notes.push_back(w);
}

void note_cluster(Inputs& in) {
  for (std::string& n : cluster_notes(in.cluster)) in.notes.push_back(std::move(n));
}

void fill_default_global_batch(Inputs& in, int multiple_of) {
  TrainingSpec& t = in.training;
  if (t.global_batch != 0) return;
  t.global_batch = default_global_batch(t.seq_len, multiple_of);
  const double tokens = static_cast<double>(t.global_batch) * t.seq_len;
  in.notes.push_back(fmt::format(
      "global batch {} sequences x {} tokens = {} tokens per step: the default of {} tokens{}, "
      "Llama 2's batch (Touvron et al. 2023, Table 1) and Llama 3's first (Dubey et al. 2024, "
      "Sec. 3.4.1); --global-batch sets it",
      t.global_batch, t.seq_len, format_count(tokens), format_count(kDefaultTokensPerStep),
      t.global_batch != default_global_batch(t.seq_len)
          ? fmt::format(" rounded up to a multiple of dp x micro-batch = {}", multiple_of)
          : ""));
}

std::string describe_inputs(const Inputs& in) {
  const TrainingSpec& tr = in.training;
  std::string notes;
  for (const std::string& n : in.notes) notes += "note: " + n + "\n";
  return fmt::format(
      "model    {}\ncluster  {}\nplan     {}\ntraining {}, {}, sequence {}, global batch {} "
      "({} micro-batch{} per step), framework {}\n{}\n",
      describe_model(in.model), describe_cluster(in.cluster), describe(in.plan),
      describe_precision(tr), to_string(tr.optimizer), tr.seq_len, tr.global_batch,
      micro_batches_per_step(tr, in.plan), micro_batches_per_step(tr, in.plan) == 1 ? "" : "es",
      describe_framework(tr.framework), notes);
}

void add_inputs_json(nlohmann::json& j, const Inputs& in) {
  j["model"] = to_json(in.model);
  j["cluster"] = to_json(in.cluster);
  j["plan"] = to_json(in.plan);
  j["training"] = to_json(in.training);
  add_notes_json(j, in.notes);
}

void add_notes_json(nlohmann::json& j, const std::vector<std::string>& notes) {
  if (!j.contains("notes")) j["notes"] = nlohmann::json::array();
  for (const std::string& n : notes) j["notes"].push_back(n);
}

void add_trace_option(CLI::App& app, std::string& path) {
  app.add_option(
      "--trace", path,
      "Write one simulated step as Chrome Trace Event JSON (Perfetto, chrome://tracing)");
}

void write_trace(const std::string& path, const Inputs& in, const Estimate& estimate) {
  if (path.empty()) return;
  const Timeline tl = build_timeline(in.plan, estimate);
  write_file_atomically(
      path,
      trace_json(tl, fmt::format("{} on {}: {}", in.model.name, describe_cluster(in.cluster),
                                 describe(in.plan))),
      "--trace");
}

void print_json(nlohmann::json j) {
  if (j.is_object()) {
    j["schema_version"] = kJsonSchemaVersion;
    j["shardplan_version"] = shardplan_version();  // the code that made these numbers
    if (!j.contains("notes")) j["notes"] = nlohmann::json::array();
  }
  // Serialised into the stream as dump(2) would write it, without a second copy as a string
  // (plan --top 3000 --json is 19 MB).
  std::cout << std::setw(2) << j << "\n";
}

}  // namespace shardplan::cli
