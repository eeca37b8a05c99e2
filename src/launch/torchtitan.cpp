// torchtitan job TOML for v0.2.2, the last release that reads TOML (main replaced it with Python
// configs). Keys read from torchtitan/config/job_config.py @ v0.2.2; batch and mesh rules from
// train.py, distributed/parallel_dims.py and distributed/pipeline_parallel.py.
#include <fmt/format.h>

#include <sstream>

#include "common.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"

namespace shardplan {
namespace {

// torchtitan's llama3 flavors (models/llama3/__init__.py @ v0.2.2), by shape.
std::string llama3_flavor(const ModelSpec& m) {
  const bool llama = m.mlp == MlpKind::swiglu && m.norm == NormKind::rmsnorm &&
                     m.positions == PositionKind::rotary && !m.tied_embeddings &&
                     m.vocab == 128256 && m.kv_heads == 8;
  if (!llama) return "";
  if (m.layers == 32 && m.hidden == 4096 && m.heads == 32) return "8B";
  if (m.layers == 80 && m.hidden == 8192 && m.heads == 64) return "70B";
  if (m.layers == 126 && m.hidden == 16384 && m.heads == 128) return "405B";
  return "";
}

// Local batch per data-parallel rank and step: with a pipeline it holds all the step's
// micro-batches (n_microbatches = local / pipeline_parallel_microbatch_size), without one a
// single micro-batch that gradient accumulation repeats.
int local_batch(const EmitInputs& in) {
  return in.plan.pp > 1 ? in.plan.micro_batch * accumulation_steps(in) : in.plan.micro_batch;
}

const char* ac_mode(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "none";
}

// torchtitan's schedule names (torch.distributed.pipelining.schedules.get_schedule_class).
const char* titan_schedule(const ParallelPlan& p) {
  return schedule_row(schedule_of(p)).torchtitan_class;
}

// Layers per virtual stage and how much lighter the first and last are: torchtitan's
// generate_llm_fqn_per_model_part gives stage 0 layers_per_stage - first_stage_less_layers
// (distributed/pipeline_parallel.py).
struct TitanLayout {
  int per_stage = 0, first_less = 0, last_less = 0;
};
TitanLayout titan_layout(const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const int chunks = p.pp * p.interleave;
  TitanLayout l;
  l.per_stage = chunk_layers(in.model.layers, p, chunks > 2 ? 1 : 0);
  if (p.first_stage_layers >= 0) l.first_less = l.per_stage - p.first_stage_layers;
  if (p.last_stage_layers >= 0) l.last_less = l.per_stage - p.last_stage_layers;
  return l;
}

void pipeline_keys(const EmitInputs& in, toml::table& t, std::vector<Provenance>& why) {
  const ParallelPlan& p = in.plan;
  const TitanLayout l = titan_layout(in);
  t.insert("pipeline_parallel_microbatch_size", p.micro_batch);
  t.insert("pipeline_parallel_schedule", titan_schedule(p));
  t.insert("pipeline_parallel_layers_per_stage", l.per_stage);
  t.insert("pipeline_parallel_first_stage_less_layers", l.first_less);
  t.insert("pipeline_parallel_last_stage_less_layers", l.last_less);
  why.push_back({"parallelism.pipeline_parallel_schedule", titan_schedule(p),
                 fmt::format("plan: {} schedule, {} model chunk{} per device", schedule_name(p),
                             p.interleave, p.interleave > 1 ? "s" : "")});
  why.push_back(
      {"parallelism.pipeline_parallel_layers_per_stage", std::to_string(l.per_stage),
       fmt::format("{} layers on pp {} x {} virtual stages; first stage {} lighter, last {} "
                   "lighter, as planned",
                   in.model.layers, p.pp, p.interleave, l.first_less, l.last_less)});
}

toml::table parallelism(const EmitInputs& in, std::vector<Provenance>& why) {
  const ParallelPlan& p = in.plan;
  const bool shard = p.zero >= 2;
  // HSDP: FSDP2 on the (replicate, shard) mesh (llama3/infra/parallelize.py, dp_mode
  // "hybrid_shard"); otherwise one of the two is 1.
  toml::table t{{"data_parallel_replicate_degree", shard ? p.dp_replicate() : p.dp},
                {"data_parallel_shard_degree", shard ? p.shard_degree() : 1},
                {"tensor_parallel_degree", p.tp},
                {"pipeline_parallel_degree", p.pp},
                {"context_parallel_degree", p.cp},
                {"expert_parallel_degree", p.ep}};
  emit::titan_moe_keys(in, t, why);
  if (shard) {
    // "default" reshards only without a pipeline (llama3/infra/parallelize.py): say it outright.
    t.insert("fsdp_reshard_after_forward", p.zero == 3 ? "always" : "never");
    why.push_back(
        {"parallelism.fsdp_reshard_after_forward", p.zero == 3 ? "always" : "never",
         fmt::format("ZeRO-{}: FSDP2 shards weights, gradients and optimizer state over dp {}; {}",
                     p.zero, p.shard_degree(),
                     p.zero == 3 ? "weights are re-gathered for backward"
                                 : "weights stay gathered from "
                                   "forward to backward")});
    if (p.hybrid_shard()) {
      why.push_back({"parallelism.data_parallel_shard_degree", std::to_string(p.shard_degree()),
                     fmt::format("HSDP: shard groups of {}, replicated {} times; each gradient "
                                 "shard is all-reduced across the replicas",
                                 p.shard_degree(), p.dp_replicate())});
    }
  } else {
    why.push_back({"parallelism.data_parallel_replicate_degree", std::to_string(p.dp),
                   "ZeRO-0: plain DDP replicas"});
  }
  if (gathers_vocabulary(in.training, p)) {
    t.insert("disable_loss_parallel", true);
    why.push_back({"parallelism.disable_loss_parallel", "true",
                   "--full-vocab-loss: the LM head's logits are gathered and every TP rank runs "
                   "the loss on the whole vocabulary, as priced"});
  }
  if (p.pp > 1) pipeline_keys(in, t, why);
  return t;
}

}  // namespace

std::vector<PlanProblem> torchtitan_problems(const EmitInputs& in) {
  std::vector<PlanProblem> out = emit::framework_problems(in, Framework::torchtitan);
  if (!in.model.has_architecture()) {
    out.push_back(
        {"--model",
         "torchtitan builds the model from its shapes; give --model or --layers/--hidden/--heads"});
    return out;
  }
  if (in.model.has_recurrent_mixer()) {
    out.push_back({"--model", "torchtitan v0.2.2's models (llama3, llama4, deepseek_v3, qwen3) have "
                              "no Mamba-2, gated DeltaNet or lightning attention layers"});
  }
  if (in.training.optimizer != OptimizerKind::adamw) {
    out.push_back(
        {"--optimizer", "torchtitan v0.2.2 builds Adam and AdamW only (components/optimizer.py)"});
  }
  // torchtitan's job config has no gradient-sync switch: under a pipeline schedule
  // torch.distributed.pipelining defers the sync to the last micro-batch, otherwise train.py
  // reduces every micro-batch (the profile's memory.fsdp_grad_sync_with_pp).
  const GradSync sync = in.training.grad_sync;
  const bool pipelined = in.plan.pp > 1;
  if (in.plan.zero >= 2 && ((sync == GradSync::deferred && !pipelined) ||
                            (sync == GradSync::every_micro_batch && pipelined))) {
    out.push_back({"--grad-sync",
                   fmt::format("torchtitan {} under {}; its config has no switch for {}: leave "
                               "--grad-sync out",
                               pipelined ? "defers the gradient sync" : "syncs every micro-batch",
                               pipelined ? "pipeline schedules" : "plain FSDP",
                               to_string(sync))});
  }
  // Offload inside FSDP only (data_parallel_shard_degree > 1): the profile's offload rules.
  emit::titan_moe_problems(in, out);
  if (in.settings.keep_last == 1) {
    out.push_back(
        {"--keep-last",
         "torchtitan rejects keep_latest_k = 1 (\"We need to maintain at least 2 checkpoint "
         "replicas, as the last one may be in the process of being saved\"); use 2 or more"});
  }
  return out;
}

namespace {

// torchtitan v0.2.2's other registered models, by shape: models/deepseek_v3/__init__.py
// (flavor "671B": 61 layers, dim 7168, 256 experts, top-8) and models/qwen3/__init__.py
// ("30B-A3B": 48 layers, dim 2048, 128 experts; "235B-A22B": 94 layers, dim 4096, 128 experts).
struct TitanFlavor {
  std::string name, flavor;
  double rope_theta = 0;  // the flavor's own rope_theta, when it sets one
};
TitanFlavor titan_flavor(const ModelSpec& m) {
  const std::string llama = llama3_flavor(m);
  if (!llama.empty()) return {"llama3", llama, 0};
  if (m.is_mla() && m.layers == 61 && m.hidden == 7168 && m.experts == 256 &&
      m.experts_per_token == 8)
    return {"deepseek_v3", "671B", 0};
  if (m.is_moe() && m.qk_norm && m.experts == 128 && m.experts_per_token == 8 && m.kv_heads == 4) {
    if (m.layers == 48 && m.hidden == 2048) return {"qwen3", "30B-A3B", 1e6};
    if (m.layers == 94 && m.hidden == 4096) return {"qwen3", "235B-A22B", 5e6};
  }
  return {};
}

// [model]: a registered flavor when the shape is one, else a name the user registers.
toml::table model_table(const EmitInputs& in, std::vector<std::string>& notes) {
  const TitanFlavor f = titan_flavor(in.model);
  toml::table model{{"name", f.name.empty() ? in.model.name : f.name},
                    {"flavor", f.flavor.empty() ? in.model.name : f.flavor}};
  // The recipe's converters, from its row (profiles/precisions/*.json launchers.torchtitan:
  // v0.2.2 job_config.py Model.converters, quantize.linear.float8 or quantize.linear.mx).
  if (const auto* converters = in.training.recipe.flags_for("torchtitan");
      converters != nullptr && !converters->empty()) {
    toml::array list;
    for (const std::string& c : *converters) list.push_back(c);
    model.insert("converters", list);
  }
  if (f.name.empty()) {
    notes.push_back(fmt::format(
        "register a TrainSpec named '{}' with a flavor of that name ({} layers, dim {}, {} heads, "
        "{} KV heads, MLP {}, vocab {}): torchtitan builds models from its registry",
        in.model.name, in.model.layers, in.model.hidden, in.model.heads, in.model.kv_heads,
        in.model.ffn_hidden, in.model.vocab));
  }
  emit::titan_moe_notes(in, notes);
  if (!f.name.empty() && f.rope_theta > 0 && in.model.rope.theta > 0 &&
      f.rope_theta != in.model.rope.theta) {
    notes.push_back(fmt::format(
        "torchtitan's {} flavor '{}' sets rope_theta {:g}; the model's config.json has {:g}: "
        "edit the flavor (torchtitan/models/{}/__init__.py) to train the model named",
        f.name, f.flavor, f.rope_theta, in.model.rope.theta, f.name));
  }
  return model;
}

// [training]: the batch identity and the run's length.
toml::table training_table(const EmitInputs& in, EmitMeta& meta) {
  const ParallelPlan& p = in.plan;
  const TrainingSpec& tr = in.training;
  toml::table training{
      {"local_batch_size", local_batch(in)},
      {"global_batch_size", tr.global_batch},
      {"seq_len", tr.seq_len},
      {"max_norm", optimizer_of(in).clip_grad},
      {"mixed_precision_param", tr.precision == Precision::fp32 ? "float32" : "bfloat16"}};
  if (p.offload.any()) {
    training.insert("enable_cpu_offload", true);
    meta.provenance.push_back(
        {"training.enable_cpu_offload", "true",
         "plan: weights, gradients and the optimizer step in host memory (FSDP2 "
         "CPUOffloadPolicy, job_config.py Training.enable_cpu_offload)"});
  }
  if (tr.precision == Precision::bf16_pure) {
    training.insert("dtype", "bfloat16");
    meta.provenance.push_back(
        {"training.dtype", "bfloat16",
         "bf16-pure: parameters, gradients and optimizer states in bf16, no fp32 copy "
         "(job_config.py Training.dtype)"});
  }
  meta.provenance.push_back(
      {"training.local_batch_size", std::to_string(local_batch(in)),
       p.pp > 1
           ? fmt::format(
                 "micro-batch {} x {} pipeline micro-batches; torchtitan's accumulation is then "
                 "global / (local x dp) = 1",
                 p.micro_batch, accumulation_steps(in))
           : fmt::format("micro-batch; torchtitan accumulates global / (local x dp) = {} times",
                         accumulation_steps(in))});
  if (const auto steps = emit::train_steps(in)) {
    training.insert("steps", *steps);
    meta.provenance.push_back(
        {"training.steps", std::to_string(*steps), "ceil(--tokens / (global batch x sequence))"});
  } else {
    meta.notes.push_back("set training.steps (no --tokens given; torchtitan's default is 10000)");
  }
  meta.notes.push_back(
      "set training.dataset and dataset_path: torchtitan's stateful loader saves its position in "
      "each "
      "checkpoint, so a resumed run continues the data order");
  return training;
}

// [checkpoint]: the runbook's interval and keep-last-K, blocking saves that keep the optimizer.
toml::table checkpoint_table(const EmitInputs& in, EmitMeta& meta) {
  const LongRunSettings& s = in.settings;
  toml::table checkpoint{{"enable", true},
                         {"folder", "checkpoint"},
                         {"interval", s.checkpoint_interval_steps},
                         {"keep_latest_k", s.keep_last},
                         {"last_save_model_only", false},
                         {"async_mode", "disabled"}};
  meta.provenance.push_back({"checkpoint.last_save_model_only", "false",
                             "the final save keeps the optimizer so the run can resume "
                             "(the v0.2.2 default true saves weights only)"});
  meta.provenance.push_back({"checkpoint.async_mode", "disabled",
                             "blocking saves, as the runbook timed them; \"async\" hides most "
                             "of the write"});
  meta.notes.push_back(
      "torchtitan keeps fp32 parameters (no separate bf16 copy): its checkpoints are ~12 B/param "
      "where the "
      "runbook sized 14");
  return checkpoint;
}

// [activation_checkpoint]: the plan's recompute.
toml::table activation_table(const EmitInputs& in, EmitMeta& meta) {
  const ParallelPlan& p = in.plan;
  toml::table activation{{"mode", ac_mode(p.recompute)}};
  if (p.recompute == Recompute::selective) {
    activation.insert("selective_ac_option", "op");
    meta.provenance.push_back(
        {"activation_checkpoint.selective_ac_option", "op",
         "per-op selective recompute, the nearest to recomputing attention only"});
  }
  if (p.tp > 1 && !p.sequence_parallel) {
    meta.notes.push_back(
        "torchtitan's tensor parallelism always shards norms along the sequence (sequence "
        "parallel), which "
        "uses less activation memory than the plan assumed");
  }
  return activation;
}

// [comm]: init_timeout_seconds covers start-up and the first step (checkpoint load);
// train_timeout_seconds every collective after it.
toml::table comm_table(const EmitInputs& in, std::vector<Provenance>& why) {
  const int timeout_s = in.settings.timeout_minutes * 60;
  toml::table comm{{"init_timeout_seconds", std::max(300, timeout_s)},
                   {"train_timeout_seconds", timeout_s}};
  why.push_back({"comm.train_timeout_seconds", std::to_string(timeout_s),
                 "the runbook's collective timeout (torchtitan's default 100 s is shorter than a "
                 "checkpoint write)"});
  return comm;
}

// pip install, then torchrun (one node) or srun + torchrun with a c10d rendezvous (several).
std::vector<std::string> launch_lines(const EmitInputs& in) {
  const int nodes = in.cluster.nodes();
  const std::string config = emit::config_path(in, LauncherFormat::torchtitan);
  std::vector<std::string> launch = {
      "pip install torchtitan==0.2.2   # TOML job configs end with v0.2.2"};
  if (nodes > 1) {
    launch.push_back(
        fmt::format("srun --nodes={} --ntasks-per-node=1 torchrun {} --rdzv_id 101 --rdzv_backend "
                    "c10d --rdzv_endpoint \"$head_node_ip:29500\" -m torchtitan.train "
                    "--job.config_file {}",
                    nodes, emit::torchrun_rendezvous(in), config));
  } else {
    launch.push_back(
        fmt::format("torchrun --nproc_per_node {} --rdzv_backend c10d --rdzv_endpoint localhost:0 "
                    "-m torchtitan.train --job.config_file {}",
                    in.cluster.gpus_per_node, config));
  }
  return launch;
}

}  // namespace

// [optimizer] and [lr_scheduler] (job_config.py Optimizer, LRScheduler @ v0.2.2): torchtitan warms
// up, holds, then decays over the last decay_ratio of training.steps to lr x min_lr_factor
// (components/lr_scheduler.py build_lr_schedulers).
std::pair<toml::table, toml::table> optimizer_tables(const EmitInputs& in, EmitMeta& meta) {
  const OptimizerSettings o = optimizer_of(in);
  toml::table optimizer{{"name", "AdamW"},  {"lr", o.lr},
                        {"eps", o.eps},     {"weight_decay", o.weight_decay},
                        {"beta1", o.beta1}, {"beta2", o.beta2}};
  toml::table schedule{{"warmup_steps", warmup_steps_at(o, in.training)},
                       {"decay_type", o.decay == LrDecay::cosine ? "cosine" : "linear"},
                       {"min_lr_factor", o.decay == LrDecay::constant ? 1.0 : o.min_lr / o.lr}};
  if (o.decay == LrDecay::wsd) schedule.insert("decay_ratio", o.wsd_decay_fraction);
  const std::string from = emit::optimizer_source(o);
  meta.provenance.push_back(
      {"optimizer.lr / lr_scheduler",
       fmt::format("{:g}, {} warm-up steps, {} to {:g}", o.lr, warmup_steps_at(o, in.training),
                   to_string(o.decay), o.min_lr),
       from});
  if (o.decay_end_fraction < 1) {
    meta.notes.push_back(fmt::format(
        "the recipe reaches its final lr at {:.0f}% of the run; torchtitan decays until the last "
        "step",
        o.decay_end_fraction * 100));
  }
  if (o.decay == LrDecay::wsd) {
    meta.notes.push_back(
        "WSD: torchtitan's decay_type cosine would decay from the end of warm-up; the stable "
        "phase and the final decay are lr_scheduler.decay_ratio with decay_type linear");
  }
  for (const auto& n : o.notes) meta.notes.push_back(n);
  return {optimizer, schedule};
}

// The tables are built in the order their provenance and notes are printed.
TorchtitanConfig emit_torchtitan(const EmitInputs& in) {
  TorchtitanConfig c;
  EmitMeta& meta = c.meta;
  meta.provenance = emit::common_provenance(in);
  const toml::table model = model_table(in, meta.notes);
  const toml::table training = training_table(in, meta);
  const toml::table checkpoint = checkpoint_table(in, meta);
  const toml::table activation = activation_table(in, meta);
  const toml::table comm = comm_table(in, meta.provenance);
  const toml::table parallel = parallelism(in, meta.provenance);
  const auto [optimizer, schedule] = optimizer_tables(in, meta);
  c.config =
      toml::table{{"job", toml::table{{"dump_folder", "./outputs"},
                                      {"description", in.model.name + ": " + describe(in.plan)}}},
                  {"model", model},
                  {"optimizer", optimizer},
                  {"lr_scheduler", schedule},
                  {"training", training},
                  {"parallelism", parallel},
                  {"checkpoint", checkpoint},
                  {"activation_checkpoint", activation},
                  {"comm", comm},
                  {"metrics", toml::table{{"log_freq", 1}}},
                  {"debug", toml::table{{"seed", in.settings.seed}}}};
  if (in.training.compiled_loss) {
    // v0.2.2 job_config.py Compile: enable, components (default ["model", "loss"]).
    c.config.insert("compile",
                    toml::table{{"enable", true}, {"components", toml::array{"model", "loss"}}});
    meta.provenance.push_back(
        {"compile.enable", "true",
         "--compiled-loss: torch.compile on the model and the loss (components, torchtitan's "
         "default); the compiled loss keeps the bf16 logits and their gradient, not an fp32 copy"});
  }
  meta.provenance.push_back({"metrics.log_freq", "1",
                             "long runs: log throughput every step so a slow node shows at once"});
  meta.launch = launch_lines(in);
  emit::finish_meta(meta, in, "torchtitan v0.2.2 job config");
  return c;
}

std::string write_torchtitan(const TorchtitanConfig& c) {
  std::ostringstream out;
  out << emit::comment_block(c.meta.header) << "\n" << c.config << "\n";
  return out.str();
}

}  // namespace shardplan
