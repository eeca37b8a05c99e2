// A Megatron-LM launch script or argument list read back: the pretrain_gpt.py arguments
// (megatron/training/arguments.py) and torchrun's --nnodes / --nproc_per_node, as planning flags.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "read_parts.hpp"
#include "megatron_shell.hpp"
#include "shardplan/files.hpp"
#include "shardplan/names.hpp"

namespace shardplan::config {
namespace {

// Arguments that carry a value and become a planning flag as written.
const std::map<std::string, std::string>& valued_args() {
  static const std::map<std::string, std::string> table = {
      {"--tensor-model-parallel-size", "--tp"},
      {"--pipeline-model-parallel-size", "--pp"},
      {"--context-parallel-size", "--cp"},
      {"--expert-model-parallel-size", "--ep"},
      {"--expert-tensor-parallel-size", "--expert-tp"},
      {"--num-virtual-stages-per-pipeline-rank", "--interleave"},
      {"--decoder-first-pipeline-num-layers", "--first-stage-layers"},
      {"--decoder-last-pipeline-num-layers", "--last-stage-layers"},
      {"--micro-batch-size", "--micro-batch"},
      {"--global-batch-size", "--global-batch"},
      {"--seq-length", "--seq-len"},
      {"--num-layers", "--layers"},
      {"--hidden-size", "--hidden"},
      {"--num-attention-heads", "--heads"},
      {"--num-query-groups", "--kv-heads"},
      {"--num-key-value-heads", "--kv-heads"},  // Megatron-DeepSpeed's GQA
      {"--ds-sequence-parallel-size", "--cp"},  // Megatron-DeepSpeed's DeepSpeed-Ulysses
      {"--num-experts", "--experts"},
      {"--moe-router-topk", "--top-k"},
  };
  return table;
}

// Arguments shardplan reads in its own way below (values or switches).
const std::set<std::string>& read_args() {
  static const std::set<std::string> table = {
      "--num-layers-per-virtual-pipeline-stage", "--pipeline-model-parallel-layout",
      "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
      "--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp",
      "--data-parallel-sharding-strategy", "--use-torch-fsdp2", "--optimizer-cpu-offload",
      "--cpu-offloading", "--cpu-offloading-num-layers", "--cpu-offloading-weights",
      "--cpu-offloading-activations", "--overlap-grad-reduce", "--tp-comm-overlap", "--bf16", "--fp16", "--fp8-format",
      "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32", "--recompute-granularity",
      "--recompute-modules", "--num-distributed-optimizer-instances", "--optimizer",
      "--attention-backend", "--swiglu", "--ffn-hidden-size", "--moe-ffn-hidden-size",
      "--group-query-attention", "--moe-expert-capacity-factor",
      "--overlap-moe-expert-parallel-comm", "--moe-enable-deepep", "--moe-router-force-load-balancing",
      "--moe-flex-dispatcher-backend", "--recompute-activations", "--checkpoint-activations",
      "--normalization", "--position-embedding-type", "--use-rotary-position-embeddings",
      "--no-position-embedding", "--untie-embeddings-and-output-weights", "--disable-bias-linear",
      "--add-qkv-bias", "--tokenizer-type", "--make-vocab-size-divisible-by", "--pad-vocab-size-to",
      "--kv-channels", "--vocab-size", "--hybrid-override-pattern",
      "--hybrid-layer-pattern", "--cp-comm-type", "--cuda-graph-impl", "--cuda-graph-modules",
      "--cuda-graph-scope", "--enable-cuda-graph", "--external-cuda-graph",
      // Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed megatron/arguments.py, deepspeed args)
      "--deepspeed", "--deepspeed-config", "--zero-stage", "--ds-sequence-parallel-size",
      "--activations-checkpoint-method",
      "--deepspeed-activation-checkpointing", "--no-pipeline-parallel",
      // torchrun, the deepspeed launcher, srun
      "--nnodes", "--nproc-per-node", "--num-gpus", "--num-nodes",
      "--ntasks-per-node", "--nodes",
  };
  return table;
}

// Arguments known to change neither memory nor time as shardplan prices them (learning-rate
// schedule, data, checkpoints, logging, architecture details the model already carries, the
// launcher's rendezvous): read and set aside without a note.
const std::set<std::string>& known_other_args() {
  static const std::set<std::string> table = {
      "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters", "--lr-decay-samples",
      "--lr-warmup-iters", "--lr-warmup-samples", "--lr-warmup-fraction", "--lr-warmup-init",
      "--lr-wsd-decay-style", "--lr-wsd-decay-iters", "--lr-wsd-decay-samples", "--weight-decay",
      "--start-weight-decay", "--end-weight-decay", "--weight-decay-incr-style", "--clip-grad",
      "--adam-beta1", "--adam-beta2", "--adam-eps", "--sgd-momentum", "--init-method-std",
      "--loss-scale", "--initial-loss-scale", "--min-loss-scale", "--loss-scale-window",
      "--hysteresis", "--rotary-base", "--use-rope-scaling", "--rotary-scaling-factor",
      "--rope-scaling-factor", "--rotary-percent", "--rotary-seq-len-interpolation-factor",
      "--use-rotary-position-embeddings", "--norm-epsilon",
      "--attention-dropout", "--hidden-dropout", "--qk-layernorm",
      "--multi-latent-attention", "--kv-lora-rank", "--q-lora-rank", "--qk-head-dim",
      "--qk-pos-emb-head-dim", "--v-head-dim", "--max-position-embeddings",
      "--apply-layernorm-1p",
      "--moe-router-score-function", "--moe-router-enable-expert-bias",
      "--moe-router-bias-update-rate", "--moe-token-dispatcher-type", "--moe-grouped-gemm",
      "--moe-aux-loss-coeff", "--moe-router-load-balancing-type", "--moe-router-topk-scaling-factor",
      "--moe-router-num-groups", "--moe-router-group-topk", "--moe-router-dtype",
      "--moe-shared-expert-intermediate-size", "--moe-shared-expert-overlap", "--moe-layer-freq",
      "--moe-pad-expert-input-to-capacity", "--moe-token-drop-policy", "--moe-z-loss-coeff",
      "--moe-permute-fusion",
      "--moe-router-pre-softmax", "--rope-type", "--mscale", "--mscale-all-dim",
      "--yarn-beta-fast", "--yarn-beta-slow", "--yarn-original-max-position-embeddings",
      "--yarn-rotary-scaling-factor", "--mtp-num-layers", "--mtp-loss-scaling-factor", "--recompute-method", "--recompute-num-layers",
      "--optimizer-offload-fraction", "--use-precision-aware-optimizer", "--overlap-param-gather",
      "--microbatch-group-size-per-virtual-pipeline-stage", "--train-iters", "--train-samples",
      "--save", "--load", "--save-interval", "--ckpt-format", "--no-save-optim", "--no-save-rng",
      "--no-load-optim", "--no-load-rng", "--finetune", "--distributed-timeout-minutes", "--seed",
      "--dataloader-type", "--exit-signal-handler", "--exit-duration-in-mins", "--exit-interval",
      "--log-interval", "--log-throughput", "--log-timers-to-tensorboard", "--tensorboard-dir",
      "--wandb-project", "--wandb-exp-name", "--wandb-save-dir", "--timing-log-level",
      "--data-path", "--train-data-path", "--valid-data-path", "--test-data-path", "--split",
      "--data-cache-path", "--mock-data", "--num-workers", "--tokenizer-model",
      "--vocab-file", "--merge-file", "--eval-iters", "--eval-interval", "--use-mcore-models",
      "--transformer-impl", "--use-flash-attn", "--no-masked-softmax-fusion",
      "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion", "--no-bias-dropout-fusion",
      "--no-gradient-accumulation-fusion", "--no-rope-fusion", "--cross-entropy-loss-fusion",
      "--fp8-amax-history-len", "--fp8-amax-compute-algo", "--fp8-recipe", "--fp8-param-gather",
      "--fp4-format", "--fp4-recipe", "--first-last-layers-bf16", "--num-layers-at-start-in-bf16",
      "--num-layers-at-end-in-bf16",
      "--ddp-bucket-size", "--ddp-average-in-collective", "--distributed-backend",
      "--manual-gc", "--manual-gc-interval", "--use-distributed-checkpointing", "--async-save",
      "--ckpt-fully-parallel-save", "--ckpt-fully-parallel-load",
      // torchrun
      "--node_rank", "--node-rank", "--master_addr", "--master-addr", "--master_port",
      "--master-port", "--rdzv_id", "--rdzv-id", "--rdzv_backend", "--rdzv-backend",
      "--rdzv_endpoint", "--rdzv-endpoint", "--max_restarts", "--max-restarts", "--standalone",
      "--nnodes", "--monitor-interval", "--redirects", "--tee", "--log_dir", "--log-dir",
      // srun, when the script starts its ranks under SLURM
      "--ntasks", "--gpus-per-node", "--cpus-per-task",
      "--kill-on-bad-exit", "--wait", "--label", "--export", "--mpi", "--container-image",
      "--container-mounts", "--no-container-mount-home", "--exclusive", "--time", "--partition",
      "--account", "--job-name", "--output", "--error",
  };
  return table;
}

// Switches (no value): everything else takes the next word when it does not start with "--".
const std::set<std::string>& switch_args() {
  static const std::set<std::string> table = {
      "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
      "--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp",
      "--use-torch-fsdp2", "--optimizer-cpu-offload", "--overlap-grad-reduce", "--tp-comm-overlap",
      "--bf16", "--fp16", "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32",
      "--swiglu", "--group-query-attention", "--standalone", "--overlap-moe-expert-parallel-comm",
      "--moe-enable-deepep", "--moe-router-force-load-balancing", "--delay-wgrad-compute",
      "--enable-cuda-graph", "--external-cuda-graph",
      "--cpu-offloading", "--cpu-offloading-weights", "--cpu-offloading-activations",
      "--recompute-activations", "--checkpoint-activations", "--use-rotary-position-embeddings",
      "--no-position-embedding", "--untie-embeddings-and-output-weights", "--disable-bias-linear",
      "--add-qkv-bias", "--deepspeed", "--deepspeed-activation-checkpointing",
      "--no-pipeline-parallel", "--use-flash-attn", "--use-mcore-models", "--mock-data",
      "--no-masked-softmax-fusion", "--no-bias-gelu-fusion", "--no-bias-swiglu-fusion",
      "--no-bias-dropout-fusion", "--no-gradient-accumulation-fusion", "--no-rope-fusion",
      "--cross-entropy-loss-fusion", "--log-throughput", "--use-rope-scaling", "--qk-layernorm",
      "--multi-latent-attention", "--moe-grouped-gemm", "--moe-router-enable-expert-bias",
      "--moe-permute-fusion", "--moe-router-pre-softmax", "--moe-shared-expert-overlap",
      "--apply-layernorm-1p", "--fp8-param-gather", "--overlap-param-gather",
      "--use-precision-aware-optimizer", "--manual-gc", "--use-distributed-checkpointing",
      "--async-save", "--ckpt-fully-parallel-save", "--ckpt-fully-parallel-load", "--finetune",
      "--no-save-optim", "--no-save-rng", "--no-load-optim", "--no-load-rng",
      "--exit-signal-handler", "--log-timers-to-tensorboard", "--ddp-average-in-collective",
      "--first-last-layers-bf16", "--kill-on-bad-exit", "--exclusive", "--no-container-mount-home",
  };
  return table;
}

// Arguments that take every word up to the next argument (argparse nargs='*').
const std::set<std::string>& word_list_args() {
  static const std::set<std::string> table = {"--recompute-modules", "--cuda-graph-modules",
                                            "--cuda-graph-scope"};
  return table;
}

using Args = std::map<std::string, std::string>;  // argument -> value ("" for a switch)

std::vector<std::string> plan_keys() {
  std::vector<std::string> out;
  out.reserve(valued_args().size() + read_args().size());
  for (const auto& [key, flag] : valued_args()) out.push_back(key);
  out.insert(out.end(), read_args().begin(), read_args().end());
  return out;
}

// The "--name value" pairs, the last one winning as in argparse; unknown names listed.
Args arguments(const std::vector<std::string>& words, Builder& b) {
  Args args;
  const std::vector<std::string> keys = plan_keys();
  for (size_t i = 0; i < words.size(); ++i) {
    std::string name = words[i];
    if (name.size() < 3 || name.compare(0, 2, "--") != 0) continue;
    std::string value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    // Megatron-LLM and the launchers spell arguments with '_' as well as '-'.
    std::replace(name.begin() + 2, name.end(), '_', '-');
    const bool known = valued_args().count(name) || read_args().count(name) || known_other_args().count(name);
    // An unknown argument is taken to carry the next word unless that is another argument.
    const bool next_is_value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
    if (!inline_value && word_list_args().count(name)) {
      // Several words, kept comma-separated as shardplan's flag takes them.
      while (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0)
        value += (value.empty() ? "" : ",") + words[++i];
    } else if (!inline_value && !switch_args().count(name) && next_is_value) {
      value = words[++i];
    }
    if (!known) {
      b.unknown(name, keys);
      continue;
    }
    args[name] = value;
  }
  return args;
}

std::string arg(const Args& a, const std::string& name) {
  const auto it = a.find(name);
  return it == a.end() ? "" : it->second;
}

// CUDA graphs as megatron/training/arguments.py resolves them: --enable-cuda-graph is
// --cuda-graph-impl local, --external-cuda-graph transformer_engine; --cuda-graph-scope is the
// old name of --cuda-graph-modules. full_iteration, a layer graph with no modules (or "full"),
// or one of the attention and the MLP (mlp, or moe) graphs whole layers; other named modules
// (attn alone, moe_router, moe_preprocess, mamba) graph those alone.
void cuda_graphs(const Args& a, Builder& b) {
  std::string impl = arg(a, "--cuda-graph-impl");
  std::string key = "--cuda-graph-impl";
  if (a.count("--enable-cuda-graph")) impl = "local", key = "--enable-cuda-graph";
  if (a.count("--external-cuda-graph")) impl = "transformer_engine", key = "--external-cuda-graph";
  if (impl.empty() || impl == "none") return;
  if (impl != "local" && impl != "transformer_engine" && impl != "full_iteration") {
    b.refuse(key, "'" + impl +
                      "' is not a CUDA graph implementation Megatron-LM runs: none, "
                      "local, transformer_engine or full_iteration");
  }
  std::string modules = arg(a, "--cuda-graph-modules");
  if (modules.empty()) modules = arg(a, "--cuda-graph-scope");
  const std::vector<std::string> words = split_list(modules);  // read_args joins them with ','
  const std::set<std::string> named(words.begin(), words.end());
  const bool whole_layer = named.count("attn") && (named.count("mlp") || named.count("moe"));
  if (impl == "full_iteration" || named.empty() || named.count("full") ||
      named.count("full_iteration") || whole_layer) {
    b.set("--cuda-graphs", "full", key);
  } else {
    b.set("--cuda-graphs", "scoped", key);
  }
}

// A value the file does not fix ("${TP}" from the environment or a branch) cannot be planned;
// the message names the variable and how to give it.
void require_known(const Builder& b, const std::string& key, const std::string& value) {
  if (value.empty()) b.refuse(key, "has no value in the file");
  const size_t at = value.find("${");
  if (at == std::string::npos && value.find('$') == std::string::npos &&
      value.find('`') == std::string::npos)
    return;
  if (at != std::string::npos) {
    const size_t end = value.find('}', at);
    const std::string name = value.substr(at + 2, end == std::string::npos ? end : end - at - 2);
    b.refuse(key, fmt::format("'{}' is {}, which the file does not fix; give it with --set "
                              "{}=VALUE (or in the environment)",
                              value, name, name));
  }
  b.refuse(key, fmt::format("'{}' is a command's output, which the file does not fix; give the "
                            "value with --set NAME=VALUE for the variable that holds it",
                            value));
}

void zero_stage(const Args& a, Builder& b) {
  if (a.count("--use-torch-fsdp2")) {
    b.set("--zero", "3", "--use-torch-fsdp2");
  } else if (a.count("--use-megatron-fsdp")) {
    // megatron_fsdp.md: no_shard / optim / optim_grads / optim_grads_params = ZeRO-0..3; the
    // default strategy is optim_grads_params.
    const std::string s = arg(a, "--data-parallel-sharding-strategy");
    const std::map<std::string, std::string> stage = {
        {"no_shard", "0"}, {"optim", "1"}, {"optim_grads", "2"}, {"optim_grads_params", "3"}};
    const std::string key = "--data-parallel-sharding-strategy";
    if (s.empty()) {
      b.set("--zero", "3", "--use-megatron-fsdp");
      b.note_default(key + " not given: optim_grads_params (ZeRO-3), Megatron-LM's default");
    } else if (stage.count(s) == 0) {
      b.refuse(key, "'" + s + "' is not no_shard, optim, optim_grads or optim_grads_params");
    } else {
      b.set("--zero", stage.at(s), key);
    }
  } else if (a.count("--use-distributed-optimizer")) {
    b.set("--zero", "1", "--use-distributed-optimizer");
  } else if (!a.count("--deepspeed")) {
    b.note_default("no --use-distributed-optimizer: each data-parallel rank keeps the whole "
                   "optimizer state (ZeRO-0), Megatron-LM's default");
  }
}

void precision(const Args& a, Builder& b) {
  // --fp8-recipe names the recipe row (transformer_config.py at d98e8a64: tensorwise, delayed,
  // mxfp8, blockwise); without it, fp8: the megatron profile's default (delayed).
  const std::map<std::string, std::string> fp8_recipes = {{"delayed", "fp8-delayed"},
                                                          {"tensorwise", "fp8-tensorwise"},
                                                          {"blockwise", "fp8-blockwise"},
                                                          {"mxfp8", "mxfp8"}};
  if (a.count("--fp4-format")) {
    b.set("--precision", "nvfp4", "--fp4-format");
  } else if (a.count("--fp8-format") && a.count("--fp8-recipe")) {
    const std::string r = arg(a, "--fp8-recipe");
    if (fp8_recipes.count(r) == 0)
      b.refuse("--fp8-recipe", "'" + r + "' is not delayed, tensorwise, blockwise or mxfp8");
    b.set("--precision", fp8_recipes.at(r), "--fp8-recipe");
  } else if (a.count("--fp8-format")) {
    b.set("--precision", "fp8", "--fp8-format");
  } else if (a.count("--bf16")) {
    b.set("--precision", "bf16", "--bf16");
  } else if (a.count("--fp16")) {
    b.set("--precision", "fp16", "--fp16");
  } else {
    b.launcher_default("--precision", "fp32",
                       "no --bf16/--fp16: Megatron-LM trains in fp32 by default");
  }
  const std::string p = b.value_of("--precision");
  if (p != "fp32" && p != "fp16" && !a.count("--grad-reduce-in-bf16")) {
    b.launcher_default("--fp32-grads", "true",
                       "no --grad-reduce-in-bf16: Megatron-LM keeps fp32 main gradients "
                       "(18 B/param with Adam)");
  }
  if (a.count("--accumulate-allreduce-grads-in-fp32"))
    b.set("--fp32-grads", "true", "--accumulate-allreduce-grads-in-fp32");
}

// Megatron-Core's layer CPU offloading: --cpu-offloading with --cpu-offloading-num-layers N
// (TransformerConfig.cpu_offloading_num_layers, default 0: nothing offloaded). Offloading the
// layers' weights as well (--cpu-offloading-weights) is not priced here.
void offload_layers(const Args& a, Builder& b) {
  const std::string n = arg(a, "--cpu-offloading-num-layers");
  if (a.count("--cpu-offloading-weights")) {
    b.refuse("--cpu-offloading-weights",
             "offloading the layers' weights is not priced; only their activations are");
  }
  if (!a.count("--cpu-offloading")) {
    if (!n.empty() && n != "0")
      b.note_default("--cpu-offloading-num-layers without --cpu-offloading: nothing offloaded");
    return;
  }
  if (n.empty() || n == "0") {
    b.note_default("--cpu-offloading with no --cpu-offloading-num-layers: 0 layers offloaded");
    return;
  }
  b.set("--offload-activation-layers", n, "--cpu-offloading-num-layers");
}

void recompute_rest(const Args& a, Builder& b);
void vocabulary(const Args& a, Builder& b);

void recompute_and_optimizer(const Args& a, Builder& b) {
  std::string r = arg(a, "--recompute-granularity");
  // arguments.py: --recompute-activations is "selective" granularity; the older
  // --checkpoint-activations (Megatron-DeepSpeed, Megatron-LM before 2022) recomputes every layer
  // whole, as --recompute-granularity full --recompute-method uniform does.
  if (r.empty() && a.count("--recompute-activations")) {
    b.set("--recompute", "selective", "--recompute-activations");
    return recompute_rest(a, b);
  }
  if (r.empty() && a.count("--checkpoint-activations")) {
    b.set("--recompute", "full", "--checkpoint-activations");
    return recompute_rest(a, b);
  }
  // Megatron-LM 2021 (arguments.py at that time): --activations-checkpoint-method uniform|block
  // checkpoints whole layers.
  if (r.empty() && a.count("--activations-checkpoint-method")) {
    b.set("--recompute", "full", "--activations-checkpoint-method");
    return recompute_rest(a, b);
  }
  if (r == "full" || r == "selective") {
    b.set("--recompute", r, "--recompute-granularity");
    // Megatron-Core reads the modules under selective granularity only.
    const std::string modules = arg(a, "--recompute-modules");
    if (r == "selective" && !modules.empty()) {
      b.set("--recompute-modules", modules, "--recompute-modules");
    } else if (a.count("--recompute-modules")) {
      b.note_default("--recompute-modules is read under --recompute-granularity selective only");
    }
  } else if (a.count("--recompute-granularity")) {
    b.refuse("--recompute-granularity", "'" + r + "' is not full or selective");
  } else {
    b.note_default("no --recompute-granularity: activations are kept, not recomputed");
  }
  recompute_rest(a, b);
}

void recompute_rest(const Args& a, Builder& b) {
  const std::string opt = arg(a, "--optimizer");
  if (opt == "sgd") {
    b.set("--optimizer", "sgd", "--optimizer");
  } else if (opt == "adam" || opt.empty()) {
    b.set("--optimizer", "adamw", opt.empty() ? "(Megatron-LM default adam)" : "--optimizer");
  } else {
    b.refuse("--optimizer", "'" + opt + "' is not adam or sgd");
  }
  if (a.count("--optimizer-cpu-offload")) b.set("--offload", "optimizer", "--optimizer-cpu-offload");
  offload_layers(a, b);
  const std::string backend = arg(a, "--attention-backend");
  if (backend == "unfused") b.set("--attention", "standard", "--attention-backend");
}

// The architecture the script spells out, with Megatron-LM's defaults where it is silent
// (arguments.py): LayerNorm, learned absolute positions, tied embeddings, biases, a 4h GeLU MLP
// (SwiGLU: int(4h x 2/3 / 64) x 64), the vocabulary padded to a multiple of
// --make-vocab-size-divisible-by (128) x tp.
// The script's architecture is not one shardplan builds from flags: the model comes from
// --model, whole, and the shapes the script gives are not applied on top of it.
void model_from_elsewhere(Builder& b, const std::string& why) {
  b.config().holds_model = false;
  b.config().missing_model = why;
  for (const char* flag : {"--layers", "--hidden", "--heads", "--kv-heads", "--ffn-hidden", "--mlp",
                           "--norm", "--positions", "--embeddings", "--bias", "--vocab",
                           "--experts", "--top-k"})
    b.drop(flag);
}

void model(const Args& a, Builder& b) {
  if (a.count("--multi-latent-attention")) {
    return model_from_elsewhere(
        b, "--multi-latent-attention: an MLA model is priced from its own description; give "
           "--model (a preset such as deepseek-v3, or the model's config.json) beside --from");
  }
  if (a.count("--hybrid-override-pattern") || a.count("--hybrid-layer-pattern")) {
    return model_from_elsewhere(
        b, "--hybrid-layer-pattern: a hybrid Mamba model is priced from its own description; "
           "give --model (a preset such as nemotron-h-8b, or the model's config.json) beside "
           "--from");
  }
  for (const char* key : {"--num-layers", "--hidden-size", "--num-attention-heads"}) {
    if (!a.count(key)) {
      b.note_default(fmt::format("no {}: the architecture comes from --model", key));
      return;
    }
  }
  b.config().holds_model = true;
  if (a.count("--swiglu")) b.set("--mlp", "swiglu", "--swiglu");
  // The routed experts' width is --moe-ffn-hidden-size (default --ffn-hidden-size).
  const bool moe = a.count("--num-experts") > 0;
  const std::string ffn = moe && a.count("--moe-ffn-hidden-size") ? "--moe-ffn-hidden-size"
                                                                  : "--ffn-hidden-size";
  if (a.count(ffn)) {
    b.set("--ffn-hidden", arg(a, ffn), ffn);
  } else if (a.count("--swiglu")) {
    require_known(b, "--hidden-size", arg(a, "--hidden-size"));
    const long long h = integer(b, "--hidden-size", arg(a, "--hidden-size"), 1);
    b.set("--ffn-hidden", std::to_string(4 * h * 2 / 3 / 64 * 64),
          "--swiglu without --ffn-hidden-size (Megatron-LM: int(4h x 2/3 / 64) x 64)");
  }
  if (a.count("--num-query-groups") && !a.count("--group-query-attention")) {
    b.drop("--kv-heads");
    b.note_default("--num-query-groups without --group-query-attention: Megatron-LM uses "
                   "multi-head attention");
  }
  const std::string norm = lowered(arg(a, "--normalization"));  // Megatron-DeepSpeed: lower case
  if (norm == "rmsnorm") {
    b.set("--norm", "rmsnorm", "--normalization");
  } else if (norm.empty() || norm == "layernorm") {
    b.set("--norm", "layernorm", norm.empty() ? "(Megatron-LM default LayerNorm)" : "--normalization");
  } else {
    b.refuse("--normalization", "'" + norm + "' is not LayerNorm or RMSNorm");
  }
  std::string positions = arg(a, "--position-embedding-type");
  if (a.count("--use-rotary-position-embeddings")) positions = "rope";
  if (a.count("--no-position-embedding")) positions = "none";
  const std::map<std::string, std::string> kinds = {
      {"", "learned"}, {"learned_absolute", "learned"}, {"rope", "rotary"}, {"yarn", "rotary"},
      {"mrope", "rotary"}, {"none", "none"}, {"alibi", "alibi"}};
  if (kinds.count(positions) == 0) {
    b.refuse("--position-embedding-type",
             "'" + positions + "' is not learned_absolute, rope, yarn, mrope, none or alibi");
  }
  b.set("--positions", kinds.at(positions),
        positions.empty() ? "(Megatron-LM default learned_absolute)" : "--position-embedding-type");
  b.set("--embeddings", a.count("--untie-embeddings-and-output-weights") ? "untied" : "tied",
        a.count("--untie-embeddings-and-output-weights") ? "--untie-embeddings-and-output-weights"
                                                         : "(Megatron-LM default: tied)");
  if (a.count("--disable-bias-linear")) {
    b.set("--bias", a.count("--add-qkv-bias") ? "qkv" : "none", "--disable-bias-linear");
  } else {
    b.set("--bias", "all", "(Megatron-LM default: linear biases)");
  }
  vocabulary(a, b);
  const std::string kv = arg(a, "--kv-channels");
  if (!kv.empty() && kv.find('$') == std::string::npos) {
    const std::string h = arg(a, "--hidden-size"), n = arg(a, "--num-attention-heads");
    if (h.find('$') == std::string::npos && n.find('$') == std::string::npos &&
        integer(b, "--kv-channels", kv, 1) * integer(b, "--num-attention-heads", n, 1) !=
            integer(b, "--hidden-size", h, 1)) {
      model_from_elsewhere(
          b, fmt::format("--kv-channels {} x {} heads is not the hidden size {}: a head width "
                         "apart from the hidden size is priced from the model's own "
                         "description; give --model (a preset or the model's config.json) "
                         "beside --from",
                         kv, n, h));
    }
  }
}

// The vocabulary: --vocab-size or --pad-vocab-size-to, the GPT-2 BPE tokenizer's 50,257, else
// the tokenizer's and not in the script; padded as Megatron-LM pads it.
void vocabulary(const Args& a, Builder& b) {
  std::string key;
  long long vocab = 0;
  if (a.count("--pad-vocab-size-to")) {  // Megatron-DeepSpeed: the padded size itself
    key = "--pad-vocab-size-to";
    require_known(b, key, arg(a, key));
    b.set("--vocab", std::to_string(integer(b, key, arg(a, key), 1)), key);
    return;
  }
  if (a.count("--vocab-size")) {
    key = "--vocab-size";
    require_known(b, key, arg(a, key));
    vocab = integer(b, key, arg(a, key), 1);
  } else if (arg(a, "--tokenizer-type") == "GPT2BPETokenizer") {
    key = "--tokenizer-type GPT2BPETokenizer";
    vocab = 50257;
  } else {
    b.drop("--vocab");
    return;  // the note in fill_from_file says the vocabulary is the tokenizer's
  }
  const std::string d = arg(a, "--make-vocab-size-divisible-by");
  const long long divisible = d.empty() ? 128 : integer(b, "--make-vocab-size-divisible-by", d, 1);
  const std::string tp_text = b.value_of("--tp");
  const long long tp = tp_text.empty() || tp_text.find('$') != std::string::npos
                           ? 1
                           : integer(b, "--tensor-model-parallel-size", tp_text, 1);
  const long long multiple = divisible * tp;
  const long long padded = (vocab + multiple - 1) / multiple * multiple;
  b.set("--vocab", std::to_string(padded),
        padded == vocab ? key
                        : fmt::format("{} ({} padded to a multiple of {} x tp {})", key, vocab,
                                      divisible, tp));
}

// Virtual stages given as layers per stage, a layout string, or lighter ends.
void pipeline(const Args& a, Builder& b) {
  LauncherConfig& c = b.config();
  if (a.count("--num-layers-per-virtual-pipeline-stage")) {
    const std::string key = "--num-layers-per-virtual-pipeline-stage";
    c.stages.layers_per_stage = static_cast<int>(integer(b, key, arg(a, key), 1));
    c.stages.key = key;
  }
  c.embedding_counts_as_layer = a.count("--account-for-embedding-in-pipeline-split") > 0;
  c.loss_counts_as_layer = a.count("--account-for-loss-in-pipeline-split") > 0;
  if (!a.count("--pipeline-model-parallel-layout")) return;
  // transformer/pipeline_parallel_layer_layout.py: stages split by '|', "t" a layer, "t*N" N.
  const std::string key = "--pipeline-model-parallel-layout";
  std::vector<int> layers(1, 0);
  const std::string s = arg(a, key);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '|') {
      layers.push_back(0);
    } else if (s[i] == 't') {
      int n = 1;
      if (i + 1 < s.size() && s[i + 1] == '*') {
        size_t j = i + 2;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        n = static_cast<int>(integer(b, key, s.substr(i + 2, j - i - 2), 0));
        i = j - 1;
      }
      layers.back() += n;
    } else if (s[i] != 'E' && s[i] != 'L' && s[i] != ' ' && s[i] != '"' && s[i] != '\'') {
      b.refuse(key, fmt::format("'{}' holds '{}'; shardplan reads E, t, t*N, L and |", s, s[i]));
    }
  }
  const std::string pp_text = b.value_of("--pp");
  const long long pp =
      pp_text.empty() ? 1 : integer(b, "--pipeline-model-parallel-size", pp_text, 1);
  if (static_cast<long long>(layers.size()) % pp != 0) {
    b.refuse(key, fmt::format("{} stages do not split over pipeline size {}", layers.size(), pp));
  }
  b.set("--interleave", std::to_string(static_cast<long long>(layers.size()) / pp), key);
  b.set("--first-stage-layers", std::to_string(layers.front()), key);
  b.set("--last-stage-layers", std::to_string(layers.back()), key);
}

// The GPUs the script starts: torchrun --nnodes N --nproc_per_node G; else the deepspeed
// launcher's --num_nodes / --num_gpus; else srun's --nodes with one task per GPU
// (--ntasks-per-node); else the job's #SBATCH --nodes with its GPUs per node.
void launch(const Args& a, const ShellRun& run, Builder& b) {
  auto from_pair = [&](const std::string& nodes_key, const std::string& nodes,
                       const std::string& per_key, const std::string& per_node) {
    require_known(b, per_key, per_node);
    const long long g = integer(b, per_key, per_node, 1);
    long long n = 1;
    if (!nodes.empty()) {
      require_known(b, nodes_key, nodes);
      n = integer(b, nodes_key, nodes, 1);
    }
    b.set("--gpus-per-node", std::to_string(g), per_key);
    b.set("--gpus", std::to_string(n * g), nodes.empty() ? per_key : nodes_key + " x " + per_key);
  };
  if (!arg(a, "--nproc-per-node").empty())
    return from_pair("--nnodes", arg(a, "--nnodes"), "--nproc_per_node", arg(a, "--nproc-per-node"));
  if (!arg(a, "--num-gpus").empty())
    return from_pair("--num-nodes", arg(a, "--num-nodes"), "--num-gpus", arg(a, "--num-gpus"));
  if (!arg(a, "--ntasks-per-node").empty())
    return from_pair("--nodes", arg(a, "--nodes"), "--ntasks-per-node", arg(a, "--ntasks-per-node"));
  const auto sb = [&](const char* k) {
    const auto it = run.sbatch.find(k);
    return it == run.sbatch.end() ? std::string() : it->second;
  };
  std::string per = sb("--gpus-per-node");
  std::string per_key = "#SBATCH --gpus-per-node";
  if (const size_t colon = per.rfind(':'); colon != std::string::npos) per = per.substr(colon + 1);
  if (per.empty() && sb("--gres").rfind("gpu:", 0) == 0) {
    per = sb("--gres").substr(sb("--gres").rfind(':') + 1);
    per_key = "#SBATCH --gres";
  }
  if (per.empty() && !sb("--ntasks-per-node").empty()) {
    per = sb("--ntasks-per-node");
    per_key = "#SBATCH --ntasks-per-node";
  }
  auto number = [](const std::string& v) {
    return !v.empty() && v.size() < 7 && std::all_of(v.begin(), v.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
  };
  if (!sb("--nodes").empty() && (!number(sb("--nodes")) || (!per.empty() && !number(per)))) {
    b.note(fmt::format("#SBATCH --nodes {} / {} {} are not numbers the file fixes: --gpus and "
                       "--gpus-per-node say how many GPUs",
                       sb("--nodes"), per_key, per.empty() ? "(none)" : per));
    return;
  }
  if (!sb("--nodes").empty() && !per.empty())
    return from_pair("#SBATCH --nodes", sb("--nodes"), per_key, per);
  if (!sb("--nodes").empty()) {
    b.note(fmt::format("#SBATCH --nodes {} with no GPUs per node in the file: --gpus-per-node "
                       "(default 8) and --gpus say how many GPUs",
                       sb("--nodes")));
    return;
  }
  b.note_default("no torchrun --nproc_per_node / --nnodes (nor srun, deepspeed or #SBATCH "
                 "counts): the GPUs come from --gpus");
}

// Megatron-Core's --num-distributed-optimizer-instances N (DistributedDataParallelConfig): the
// distributed optimizer shards inside each of N groups of the data-parallel ranks, and each
// reduced gradient shard is all-reduced across the groups: HSDP at ZeRO-1, a shard group of
// dp / N ranks.
void optimizer_instances(const Args& a, Builder& b) {
  const std::string key = "--num-distributed-optimizer-instances";
  if (!a.count(key)) return;
  require_known(b, key, arg(a, key));
  const long long n = integer(b, key, arg(a, key), 1);
  if (n == 1) return;
  if (!a.count("--use-distributed-optimizer"))
    b.refuse(key, "needs --use-distributed-optimizer: the instances are distributed optimizers");
  const std::string gpus = b.value_of("--gpus");
  if (gpus.empty()) {
    b.refuse(key, "the data-parallel ranks it splits come from the GPU count: start the ranks "
                  "with torchrun --nnodes / --nproc_per_node in the script");
  }
  long long model_parallel = 1;
  for (const char* flag : {"--tp", "--pp", "--cp"}) {
    const std::string v = b.value_of(flag);
    if (!v.empty()) model_parallel *= std::stoll(v);
  }
  const long long dp = std::stoll(gpus) / model_parallel;
  if (dp % n != 0 || dp / n < 2) {
    b.refuse(key, fmt::format("{} instances do not split the {} data-parallel ranks into groups "
                              "of 2 or more",
                              n, dp));
  }
  b.set("--dp-shard", std::to_string(dp / n), key);
}

// The training command: of the commands the script runs, the one that passes the most
// Megatron-LM plan arguments (torchrun / srun / deepspeed / python ... pretrain_gpt.py ...); the
// arguments of every other command (a data-prep helper, nsys, echo) are not the training's.
const ShellCommand* training_command(const ShellRun& run) {
  const ShellCommand* best = nullptr;
  int best_score = 0;
  for (const ShellCommand& c : run.commands) {
    int score = 0;
    for (const std::string& w : c.words) {
      const std::string name = w.substr(0, w.find('='));
      if ((valued_args().count(name) || read_args().count(name)) && name != "--nnodes" && name != "--nodes")
        ++score;
    }
    if (score > 0 && score >= best_score) {
      best = &c;
      best_score = score;
    }
  }
  return best;
}

void say_what_was_read(const ShellRun& run, const ShellCommand* chosen, Builder& b) {
  for (const std::string& n : run.notes) b.note(n);
  if (!chosen) return;
  const size_t others = run.commands.size() - 1;
  std::string program;
  for (const std::string& w : chosen->words) {
    if (w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0) {
      program = w;
      break;
    }
  }
  b.note(fmt::format("the training command is at line {}{} ({}{}); {} other command{} in the "
                     "script not read as training arguments",
                     chosen->line, chosen->via.empty() ? "" : ", in " + chosen->via,
                     chosen->words.empty() ? "" : chosen->words[0],
                     program.empty() ? "" : " ... " + program, others, others == 1 ? "" : "s"));
}

// Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed, BigScience): ZeRO and precision live in the
// DeepSpeed JSON the script names with --deepspeed_config, often written by the script itself
// (cat <<EOF > ds_config.json), else a file kept beside it (as written, or beside the script);
// --zero-stage is what the script writes into it.
void megatron_deepspeed(const Args& a, const ShellRun& run, Builder& b) {
  if (!a.count("--deepspeed")) return;
  const std::string file = arg(a, "--deepspeed-config");
  const auto written = run.files.find(file);
  const std::string on_disk =
      written == run.files.end() ? linked_file(file, b.config().path) : std::string();
  if (written != run.files.end() || !on_disk.empty()) {
    const bool by_script = written != run.files.end();
    const std::string text =
        by_script ? written->second
                  : read_text_file(on_disk, b.config().path + ": --deepspeed_config");
    const LauncherConfig ds = read_deepspeed(text, file);
    for (const ConfigSetting& s : ds.settings) {
      if (s.flag != "--zero" && s.flag != "--precision" && s.flag != "--offload" &&
          s.flag != "--offload-to")
        continue;
      b.set(s.flag, s.value, "--deepspeed_config " + file + ": " + s.key);
    }
    if (b.value_of("--zero").empty()) b.set("--zero", "0", "--deepspeed_config " + file);
    if (!by_script) b.note("--deepspeed_config " + file + " read from " + on_disk);
    return;
  }
  if (a.count("--zero-stage")) {
    require_known(b, "--zero-stage", arg(a, "--zero-stage"));
    b.set("--zero", std::to_string(integer(b, "--zero-stage", arg(a, "--zero-stage"), 0)),
          "--zero-stage");
  }
  b.note(fmt::format("--deepspeed_config {} is neither written by the script nor readable here "
                     "(as written or beside the script); its ZeRO stage and precision are the "
                     "script's arguments'",
                     file.empty() ? "(none)" : file));
}

// arguments.py validate_args: sequence parallelism needs tensor parallelism; at tp 1 Megatron-LM
// warns and turns it off.
void sequence_parallel(const Args& a, Builder& b) {
  if (!a.count("--sequence-parallel")) return;
  const std::string tp = b.value_of("--tp");
  if (tp.empty() || tp == "1") {
    b.note("--sequence-parallel at tensor parallel 1: Megatron-LM warns and turns it off");
    return;
  }
  b.set("--sequence-parallel", "true", "--sequence-parallel");
}

}  // namespace

LauncherConfig read_megatron(const std::string& text, const std::string& path,
                             const ConfigInputs& inputs) {
  Builder b(LauncherFormat::megatron, path, "megatron");
  // launch/common.cpp finish_meta: "# <what> for <model> on <cluster>, written by shardplan <v>".
  const size_t mark = text.find(", written by shardplan");
  const size_t line = text.rfind('\n', mark == std::string::npos ? 0 : mark);
  if (mark != std::string::npos && mark < 2000) {
    const std::string head = text.substr(line == std::string::npos ? 0 : line + 1, mark);
    const size_t f = head.find(" for "), on = head.find(" on ", f == std::string::npos ? 0 : f);
    if (head.rfind("# ", 0) == 0 && f != std::string::npos && on != std::string::npos)
      b.config().written_for = head.substr(f + 5, on - f - 5);
  }
  const ShellRun run = run_script(text, {inputs.environment, inputs.fixed});
  const ShellCommand* chosen = training_command(run);
  say_what_was_read(run, chosen, b);
  std::vector<std::string> words;
  if (chosen) {
    words = chosen->words;
  } else {
    for (const ShellCommand& c : run.commands) words.insert(words.end(), c.words.begin(), c.words.end());
  }
  // A word that is only an expansion the file does not fix may hold arguments: they are not
  // read, and the plan says so rather than taking Megatron-LM's defaults in silence.
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const bool is_value = i > 0 && words[i - 1].rfind("--", 0) == 0 &&
                          words[i - 1].find('=') == std::string::npos;
    if (w.rfind("${", 0) != 0 || w.back() != '}' || is_value) continue;
    const std::string name = w.substr(2, w.size() - 3);
    b.note(fmt::format("the training command passes {}, which the file does not fix: any "
                       "arguments in it are not read (--set {}='...' gives them)",
                       w, name));
  }
  const Args a = arguments(words, b);
  for (const auto& [key, flag] : valued_args()) {
    if (!a.count(key)) continue;
    require_known(b, key, arg(a, key));
    integer(b, key, arg(a, key), 0);
    b.set(flag, arg(a, key), key);
  }
  if (a.count("--moe-expert-capacity-factor")) {
    b.set("--capacity-factor", arg(a, "--moe-expert-capacity-factor"),
          "--moe-expert-capacity-factor");
  }
  sequence_parallel(a, b);
  // Megatron-DeepSpeed's --ds-sequence-parallel-size is DeepSpeed-Ulysses; Megatron-Core's
  // --cp-comm-type (transformer_config.py cp_comm_type) is p2p (ring, the default), a2a
  // (Ulysses), allgather (K/V gathered, priced as the ring's volume) or a2a+p2p (not priced).
  if (a.count("--ds-sequence-parallel-size"))
    b.set("--cp-kind", "ulysses", "--ds-sequence-parallel-size (DeepSpeed-Ulysses)");
  if (a.count("--cp-comm-type")) {
    const std::string kind = arg(a, "--cp-comm-type");
    if (kind == "a2a") {
      b.set("--cp-kind", "ulysses", "--cp-comm-type");
    } else if (kind == "p2p" || kind == "allgather") {
      b.set("--cp-kind", "ring", "--cp-comm-type");
    } else {
      b.refuse("--cp-comm-type", "'" + kind + "' is not priced: p2p and allgather price as ring "
                                 "attention, a2a as Ulysses (give --cp-kind to choose)");
    }
  }
  // MoE execution: the overlapped all-to-alls, DeepEP's dispatch, forced balance.
  for (const auto& [key, flag, value] :
       {std::tuple{"--overlap-moe-expert-parallel-comm", "--moe-a2a-overlap", "true"},
        std::tuple{"--moe-enable-deepep", "--moe-dispatcher", "deepep"},
        std::tuple{"--moe-router-force-load-balancing", "--moe-force-balance", "true"}}) {
    if (a.count(key)) b.set(flag, value, key);
  }
  if (arg(a, "--moe-flex-dispatcher-backend") == "deepep")
    b.set("--moe-dispatcher", "deepep", "--moe-flex-dispatcher-backend");
  if (a.count("--tp-comm-overlap")) b.set("--tp-comm-overlap", "true", "--tp-comm-overlap");
  cuda_graphs(a, b);
  if (!a.count("--overlap-grad-reduce")) {
    b.launcher_default("--no-overlap", "true",
                       "no --overlap-grad-reduce: Megatron-LM reduces gradients after the "
                       "backward pass, not overlapped with it (its default)");
  }
  if (!a.count("--micro-batch-size"))
    b.note_default("no --micro-batch-size: micro-batch 1");
  // arguments.py: without --global-batch-size, one micro-batch per data-parallel rank.
  if (!a.count("--global-batch-size")) b.config().default_accumulation = 1;
  zero_stage(a, b);
  precision(a, b);
  megatron_deepspeed(a, run, b);
  recompute_and_optimizer(a, b);
  model(a, b);
  pipeline(a, b);
  launch(a, run, b);
  optimizer_instances(a, b);
  return b.take();
}

}  // namespace shardplan::config
