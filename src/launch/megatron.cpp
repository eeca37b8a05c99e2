// Megatron-LM pretrain_gpt.py arguments as a bash script (NVIDIA/Megatron-LM main, core 0.19/0.20).
// Flag names read from megatron/training/arguments.py and the dataclasses it generates flags from
// (training/config/*.py, core/transformer/transformer_config.py, core/model_parallel_config.py).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common.hpp"
#include "megatron_args.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/schedule.hpp"
#include "shardplan/table.hpp"

namespace shardplan {
namespace {

using Args = emit::MegatronArgs;

bool fsdp(const ParallelPlan& p) {
  return p.zero >= 2;
}

// The first and last virtual stage one layer lighter than the rest: what Megatron-Core's
// --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split give.
bool lighter_ends(const ModelSpec& m, const ParallelPlan& p) {
  const int chunks = p.pp * p.interleave;
  const int per_chunk = chunk_layers(m.layers, p, chunks / 2);
  return p.first_stage_layers == per_chunk - 1 && p.last_stage_layers == per_chunk - 1;
}

// Megatron-Core's --pipeline-model-parallel-layout: one entry per virtual stage in model order,
// E the embedding, t a transformer layer, m a multi-token-prediction layer (after every decoder
// layer, in the last virtual stage), L the loss (transformer/pipeline_parallel_layer_layout.py
// parse_str_to_list and validate_layer_layout).
std::string layout_string(const ModelSpec& m, const ParallelPlan& p) {
  const int chunks = p.pp * p.interleave;
  std::string out;
  for (int c = 0; c < chunks; ++c) {
    if (c > 0) out += "|";
    if (c == 0) out += "E";
    const int n = chunk_layers(m.layers, p, c);
    if (n > 0) out += n == 1 ? "t" : fmt::format("t*{}", n);
    if (c == chunks - 1) out += std::string(static_cast<size_t>(m.mtp_layers), 'm') + "L";
  }
  return out;
}

// Transformer layers the plan's layout holds, summed over its virtual stages.
int layout_layers(const ModelSpec& m, const ParallelPlan& p) {
  int sum = 0;
  for (int c = 0; c < p.pp * p.interleave; ++c) sum += chunk_layers(m.layers, p, c);
  return sum;
}

enum class LayoutFlags { even, counted, first_last, layout };

// --decoder-first/last-pipeline-num-layers hold a whole rank's layers, each > 0, with the middle
// layers an even split over the middle ranks (TransformerConfig.__post_init__, "Uneven PP").
bool first_last_expresses(const ModelSpec& m, const ParallelPlan& p) {
  if (p.interleave != 1) return false;
  int middle_layers = m.layers;
  int middle_ranks = p.pp;
  for (int n : {p.first_stage_layers, p.last_stage_layers}) {
    if (n < 0) continue;
    if (n == 0) return false;
    middle_layers -= n;
    --middle_ranks;
  }
  if ((middle_layers > 0) != (middle_ranks > 0)) return false;
  return middle_ranks == 0 || middle_layers % middle_ranks == 0;
}

// Which of Megatron-LM's layout flags say the plan's split. Without any, validate_args asserts
// "Number of layers should be divisible by the pipeline-model-parallel size" (arguments.py), so
// an uneven even split (61 layers on pp 16) needs the layout string.
LayoutFlags layout_flags(const ModelSpec& m, const ParallelPlan& p) {
  if (p.pp == 1) return LayoutFlags::even;
  const bool custom = p.first_stage_layers >= 0 || p.last_stage_layers >= 0;
  if (!custom)
    return m.layers % (p.pp * p.interleave) == 0 ? LayoutFlags::even : LayoutFlags::layout;
  if (lighter_ends(m, p)) return LayoutFlags::counted;
  return first_last_expresses(m, p) ? LayoutFlags::first_last : LayoutFlags::layout;
}

// Stage layout and virtual stages in Megatron-LM's own flags (megatron/training/arguments.py).
void pipeline_layout_args(Args& a, const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const LayoutFlags flags = layout_flags(in.model, p);
  switch (flags) {
    case LayoutFlags::even:
      break;
    case LayoutFlags::counted:
      a.add("--account-for-embedding-in-pipeline-split")
          .add("--account-for-loss-in-pipeline-split");
      break;
    case LayoutFlags::first_last:
      if (p.first_stage_layers >= 0)
        a.add("--decoder-first-pipeline-num-layers", p.first_stage_layers);
      if (p.last_stage_layers >= 0)
        a.add("--decoder-last-pipeline-num-layers", p.last_stage_layers);
      break;
    case LayoutFlags::layout:
      a.add("--pipeline-model-parallel-layout", layout_string(in.model, p));
      break;
  }
  if (p.interleave == 1) return;
  if (flags != LayoutFlags::layout) a.add("--num-virtual-stages-per-pipeline-rank", p.interleave);
  const int group = microbatch_group_size(p, micro_batches_per_step(in.training, p));
  if (group != p.pp) a.add("--microbatch-group-size-per-virtual-pipeline-stage", group);
}

void parallel_args(Args& a, const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  a.add("--tensor-model-parallel-size", p.tp).add("--pipeline-model-parallel-size", p.pp);
  pipeline_layout_args(a, in);
  if (p.cp > 1) a.add("--context-parallel-size", p.cp);
  // transformer_config.py cp_comm_type: p2p (ring, the default) or a2a (Ulysses-style).
  if (p.cp > 1 && in.training.context_parallel == ContextParallel::ulysses)
    a.add("--cp-comm-type", "a2a");
  if (p.ep > 1) a.add("--expert-model-parallel-size", p.ep);
  if (p.sequence_parallel) a.add("--sequence-parallel");
  if (p.zero == 1) a.add("--use-distributed-optimizer");
  // HSDP at ZeRO-1: dp / shard distributed-optimizer instances, each sharding over its shard
  // group, the gradient shards all-reduced across them (DistributedDataParallelConfig).
  if (p.hybrid_shard()) a.add("--num-distributed-optimizer-instances", p.dp_replicate());
  // Megatron-Core's optimizer CPU offload (megatron/core/optimizer/cpu_offloading): the whole
  // optimizer step on the host, with the precision-aware optimizer it requires.
  if (p.offload.optimizer) {
    a.add("--optimizer-cpu-offload")
        .add("--optimizer-offload-fraction", "1.0")
        .add("--use-precision-aware-optimizer");
  }
  // Megatron-Core's layer CPU offloading (TransformerConfig.cpu_offloading and
  // cpu_offloading_num_layers, megatron/core/transformer/transformer_config.py): the saved
  // activations of N layers go to host memory after their forward, through Transformer Engine's
  // cpu_offload context; its checks (N < num_layers, pp 1, no recompute) are the rule
  // framework_offload_layers'.
  if (p.offload.activation_layers > 0) {
    a.add("--cpu-offloading").add("--cpu-offloading-num-layers", p.offload.activation_layers);
  }
  if (fsdp(p)) {
    a.add("--use-megatron-fsdp")
        .add("--data-parallel-sharding-strategy",
             p.zero == 3 ? "optim_grads_params" : "optim_grads");
  }
  if (in.training.overlap_grad_reduce && p.dp > 1) {
    a.add("--overlap-grad-reduce");
    // validate_args: --overlap-param-gather needs a sharded optimizer and --overlap-grad-reduce.
    if (p.zero >= 1 && in.training.overlap_param_gather) a.add("--overlap-param-gather");
  }
  if (in.training.tp_comm_overlap && p.sequence_parallel) a.add("--tp-comm-overlap");
  // CUDA graphs (transformer_config.py cuda_graph_impl / cuda_graph_modules): whole layers as
  // Megatron-Core's own graphs; scoped as Transformer Engine's per-module graphs of the attention
  // (and of a MoE layer's router and preprocessing), the modules NVIDIA's recipes scope.
  if (in.training.cuda_graphs == CudaGraphs::full) {
    a.add("--cuda-graph-impl", "local");
  } else if (in.training.cuda_graphs == CudaGraphs::scoped) {
    a.add("--cuda-graph-impl", "transformer_engine");
    a.words("--cuda-graph-modules",
            in.model.is_moe() ? std::vector<std::string>{"attn", "moe_router", "moe_preprocess"}
                              : std::vector<std::string>{"attn"});
  }
}

// The recipe row's flags (profiles/precisions/*.json launchers.megatron, as Megatron-LM commit
// d98e8a64 spells them: --fp8-format with --fp8-recipe, or --fp4-format with --fp4-recipe), and
// the recipe's BF16 first and last layers (--first-last-layers-bf16, at most the layers of a
// pipeline stage: __post_init__'s check).
void precision_args(Args& a, const EmitInputs& in) {
  const PrecisionRecipe& r = in.training.recipe;
  const std::vector<std::string>* flags = r.flags_for("megatron");
  SHARDPLAN_CHECK(flags != nullptr, "the megatron profile's recipe rows refuse what it cannot run");
  for (size_t i = 0; i < flags->size(); ++i) {
    const std::string& flag = (*flags)[i];
    if (i + 1 < flags->size() && !(*flags)[i + 1].starts_with("--")) {
      a.add(flag, (*flags)[++i]);
    } else {
      a.add(flag);
    }
  }
  const int stage_layers = in.model.layers / std::max(1, in.plan.pp);
  const int first = std::min(r.bf16_first_layers, stage_layers);
  const int last = std::min(r.bf16_last_layers, stage_layers);
  if (first + last > 0) {
    a.add("--first-last-layers-bf16")
        .add("--num-layers-at-start-in-bf16", first)
        .add("--num-layers-at-end-in-bf16", last);
  }
}

void training_args(Args& a, const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  const TrainingSpec& tr = in.training;
  a.add("--micro-batch-size", p.micro_batch).add("--global-batch-size", tr.global_batch);
  if (const auto steps = emit::train_steps(in)) {
    a.add("--train-iters", *steps);
  } else {
    a.shell("--train-iters", "TRAIN_ITERS");
  }
  precision_args(a, in);
  // Megatron-LM keeps fp32 main gradients for bf16 unless told otherwise (arguments.py).
  if ((tr.precision == Precision::bf16 || tr.recipe.low_precision()) && !tr.fp32_grads)
    a.add("--grad-reduce-in-bf16");
  if (p.recompute == Recompute::full) {
    a.add("--recompute-granularity", "full")
        .add("--recompute-method", "uniform")
        .add("--recompute-num-layers", 1);
  } else if (p.recompute == Recompute::selective) {
    a.add("--recompute-granularity", "selective");
    if (p.recompute_modules != 0)
      a.words("--recompute-modules", recompute_module_list(p.recompute_modules));
  }
  a.add("--optimizer", tr.optimizer == OptimizerKind::sgd_momentum ? "sgd" : "adam");
}

void long_run_args(Args& a, const EmitInputs& in) {
  const LongRunSettings& s = in.settings;
  a.shell("--save", "CHECKPOINT_DIR").shell("--load", "CHECKPOINT_DIR");
  a.add("--save-interval", s.checkpoint_interval_steps);
  a.add("--ckpt-format", fsdp(in.plan) ? "fsdp_dtensor" : "torch_dist");
  a.add("--distributed-timeout-minutes", s.timeout_minutes);
  a.add("--seed", s.seed);
  a.add("--dataloader-type", "single");
  a.add("--exit-signal-handler");
  a.add("--log-interval", 1).add("--log-throughput");
  a.shell("--data-path", "DATA_PATH");
  a.add("--tokenizer-type", "HuggingFaceTokenizer").shell("--tokenizer-model", "TOKENIZER_MODEL");
}

void provenance(MegatronScript& s, const EmitInputs& in) {
  const ParallelPlan& p = in.plan;
  auto& why = s.meta.provenance;
  // The common figures first; the model and optimizer args have added theirs already.
  std::vector<Provenance> common = emit::common_provenance(in);
  why.insert(why.begin(), common.begin(), common.end());
  const char* zero =
      p.zero == 0   ? "data parallel with replicated optimizer (no flag)"
      : p.zero == 1 ? "--use-distributed-optimizer"
      : p.zero == 2 ? "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads"
                    : "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params";
  why.push_back({fmt::format("ZeRO-{}", p.zero), zero,
                 "Megatron-LM's equivalent (megatron_fsdp.md: no_shard / optim "
                 "/ optim_grads / optim_grads_params = ZeRO-0..3)"});
  why.push_back({"--save-interval", std::to_string(in.settings.checkpoint_interval_steps),
                 "checkpoint interval; optimizer and RNG states are saved by default "
                 "(--no-save-optim, --no-save-rng "
                 "not given)"});
  why.push_back({"--dataloader-type single", "resumable",
                 "restarts at the checkpoint's consumed_train_samples"});
  why.push_back({"--log-interval 1 --log-throughput", "every step",
                 "long runs: log throughput every step so a slow node shows at once"});
  why.push_back(
      {"--exit-signal-handler", "on", "saves a checkpoint and exits on SIGTERM (preemption)"});
  if (!in.training.fp32_grads && in.training.precision != Precision::fp32 &&
      in.training.precision != Precision::fp16) {
    why.push_back({"--grad-reduce-in-bf16", "on",
                   "the plan's 2 B/param gradients (--fp32-grads for Megatron's fp32 "
                   "main gradients, 18 B/param)"});
  }
  if (const auto steps = emit::train_steps(in)) {
    why.push_back({"--train-iters", std::to_string(*steps),
                   fmt::format("ceil({} tokens / ({} x {}))", format_count(in.training.tokens),
                               in.training.global_batch, in.training.seq_len)});
  }
}

}  // namespace

std::vector<PlanProblem> megatron_problems(const EmitInputs& in) {
  std::vector<PlanProblem> out = emit::framework_problems(in, Framework::megatron);
  const ModelSpec& m = in.model;
  if (!m.has_architecture()) {
    out.push_back(
        {"--model",
         "pretrain_gpt.py needs the layer shapes; give --model or --layers/--hidden/--heads"});
    return out;
  }
  if (m.mlp == MlpKind::geglu)
    out.push_back({"--mlp", "pretrain_gpt.py has no GeGLU MLP (only --swiglu and --quick-geglu)"});
  if (gathers_vocabulary(in.training, in.plan))
    out.push_back({"--full-vocab-loss",
                   "Megatron-LM's GPT model always runs the vocabulary-parallel cross-entropy "
                   "(each TP rank holds V/tp of the logits); drop --full-vocab-loss"});
  if (m.positions == PositionKind::alibi)
    out.push_back({"--model", "pretrain_gpt.py has no ALiBi position embedding"});
  if (m.has_block_pattern()) {
    // Megatron-LM trains these with pretrain_mamba.py (MambaModel, --hybrid-override-pattern),
    // whose arguments this script does not write.
    out.push_back({"--model", "pretrain_gpt.py has no Mamba-2 blocks; Megatron-LM trains "
                              "Nemotron-H-style hybrids with pretrain_mamba.py "
                              "(--hybrid-override-pattern), which shardplan does not emit"});
  } else if (m.is_hybrid()) {
    out.push_back({"--model", fmt::format("pretrain_gpt.py as shardplan writes it has no {} "
                                          "layers; shardplan does not emit this hybrid",
                                          to_string(m.linear.mixer))});
  }
  const bool all_biases = m.qkv_bias && m.out_bias && m.mlp_bias;
  if (!all_biases && (m.out_bias || m.mlp_bias)) {
    out.push_back(
        {"--model", "Megatron-LM biases are all on, all off, or only on QKV (--add-qkv-bias)"});
  }
  if (in.training.optimizer == OptimizerKind::adafactor ||
      in.training.optimizer == OptimizerKind::adam_8bit) {
    out.push_back(
        {"--optimizer", fmt::format("Megatron-LM's --optimizer has no {}; use adamw or sgd",
                                    to_string(in.training.optimizer))});
  }
  if (in.plan.pp > 1 && layout_layers(m, in.plan) != m.layers) {
    out.push_back({"--first-stage-layers",
                   fmt::format("the plan's pipeline stages hold {} of the model's {} layers; "
                               "Megatron's layout must place every layer",
                               layout_layers(m, in.plan), m.layers)});
  }
  for (PlanProblem& p : emit::megatron_model_problems(in)) out.push_back(std::move(p));
  return out;
}

MegatronScript emit_megatron(const EmitInputs& in) {
  MegatronScript s;
  const ClusterSpec& c = in.cluster;
  const bool multi = c.nodes() > 1;
  s.variables = {
      {"NNODES", std::to_string(c.nodes())},
      {"GPUS_PER_NODE", std::to_string(c.gpus_per_node)},
      {"NODE_RANK", "${NODE_RANK:-${SLURM_NODEID:-0}}"},
      {"MASTER_ADDR", multi ? "${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}"
                            : "${MASTER_ADDR:-127.0.0.1}"},
      {"MASTER_PORT", "${MASTER_PORT:-29500}"},
      {"CHECKPOINT_DIR", "${CHECKPOINT_DIR:?set CHECKPOINT_DIR to shared storage}"},
      {"DATA_PATH", "${DATA_PATH:?set DATA_PATH to the Megatron .bin/.idx prefix}"},
      {"TOKENIZER_MODEL",
       "${TOKENIZER_MODEL:?set TOKENIZER_MODEL to a Hugging Face tokenizer name or path}"},
      {"KEEP_LAST", std::to_string(in.settings.keep_last)},
  };
  if (!emit::train_steps(in)) {
    s.variables.push_back(
        {"TRAIN_ITERS", "${TRAIN_ITERS:?set TRAIN_ITERS (or pass --tokens to shardplan emit)}"});
  }
  // Megatron-LM's examples set it for tensor-parallel overlap; Megatron-FSDP asserts it is not 1.
  if (!fsdp(in.plan)) s.exports.push_back({"CUDA_DEVICE_MAX_CONNECTIONS", "1"});
  Args a(s);
  parallel_args(a, in);
  emit::megatron_model_args(a, in);
  training_args(a, in);
  emit::megatron_optimizer_args(a, in);
  long_run_args(a, in);
  provenance(s, in);
  s.meta.notes = {
      fmt::format("keep the last {} checkpoints: Megatron-LM has no flag for it (most_recent_k is "
                  "not a CLI argument), so "
                  "node 0 prunes older complete iter_* directories below",
                  in.settings.keep_last),
      "the vocabulary comes from the tokenizer, padded to a multiple of 128 x tp "
      "(--make-vocab-size-divisible-by)",
      emit::straggler_note(in),
  };
  const std::string script = emit::config_path(in, LauncherFormat::megatron);
  if (multi) {
    s.meta.launch = {
        fmt::format("on each of the {} nodes: NODE_RANK=<0..{}> MASTER_ADDR=<node 0> bash {}",
                    c.nodes(), c.nodes() - 1, script),
        fmt::format("or under SLURM: srun --nodes={} --ntasks-per-node=1 bash {} (NODE_RANK from "
                    "SLURM_NODEID)",
                    c.nodes(), script)};
  } else {
    s.meta.launch = {"bash " + script};
  }
  s.meta.launch.push_back(
      "(the script runs torchrun " + emit::torchrun_rendezvous(in) +
      " --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT "
      "pretrain_gpt.py; set CHECKPOINT_DIR, DATA_PATH and TOKENIZER_MODEL)");
  emit::finish_meta(s.meta, in, "Megatron-LM pretrain_gpt.py");
  return s;
}

namespace {

// A literal that needs no quotes in bash, or single quotes around it.
std::string shell_word(const std::string& v) {
  for (char ch : v) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) ||
          std::string("._,:/+-=").find(ch) != std::string::npos)) {
      std::string q = "'";
      for (char x : v) q += x == '\'' ? std::string("'\\''") : std::string(1, x);
      return q + "'";
    }
  }
  return v;
}

}  // namespace

std::string write_megatron(const MegatronScript& s) {
  std::string out =
      "#!/usr/bin/env bash\n" + emit::comment_block(s.meta.header) + "set -euo pipefail\n\n";
  for (const auto& [name, value] : s.variables) out += fmt::format("{}=\"{}\"\n", name, value);
  for (const auto& [name, value] : s.exports)
    out += fmt::format("export {}={}\n", name, shell_word(value));
  for (const auto& check : s.checks) out += check + "\n";
  out += "\nMEGATRON_ARGS=(\n";
  for (const MegatronArg& a : s.args) {
    if (!a.words.empty()) {
      std::string line = "  ";
      line.append(a.flag);
      for (const std::string& w : a.words) line.append(" ").append(shell_word(w));
      out.append(line).append("\n");
    } else if (a.value.empty()) {
      out += fmt::format("  {}\n", a.flag);
    } else {
      out += fmt::format("  {} {}\n", a.flag,
                         a.shell ? fmt::format("\"{}\"", a.value) : shell_word(a.value));
    }
  }
  out +=
      ")\n\n"
      "# Keep the newest $KEEP_LAST complete checkpoints (Megatron-LM has no flag for it); the one "
      "being\n"
      "# written is newer than latest_checkpointed_iteration.txt and is never touched.\n"
      "prune_checkpoints() {\n"
      "  local latest\n"
      "  latest=$(cat \"$CHECKPOINT_DIR/latest_checkpointed_iteration.txt\" 2>/dev/null) || return "
      "0\n"
      "  find \"$CHECKPOINT_DIR\" -maxdepth 1 -name 'iter_*' | sort \\\n"
      "    | awk -v last=\"$(printf '%s/iter_%07d' \"$CHECKPOINT_DIR\" \"$latest\")\" '$0 <= last' "
      "\\\n"
      "    | head -n -\"$KEEP_LAST\" | xargs -r rm -rf\n"
      "}\n"
      "if [ \"$NODE_RANK\" = 0 ]; then\n"
      "  (while sleep 300; do prune_checkpoints; done) &\n"
      "  pruner=$!\n"
      "  trap 'kill \"$pruner\" 2>/dev/null' EXIT\n"
      "fi\n\n"
      "torchrun --nnodes \"$NNODES\" --nproc_per_node \"$GPUS_PER_NODE\" --node_rank "
      "\"$NODE_RANK\" \\\n"
      "  --master_addr \"$MASTER_ADDR\" --master_port \"$MASTER_PORT\" \\\n"
      "  pretrain_gpt.py \"${MEGATRON_ARGS[@]}\"\n";
  return out;
}

}  // namespace shardplan
