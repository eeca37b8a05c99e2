// A Megatron-LM launch script or argument list read back: the pretrain_gpt.py arguments
// (megatron/training/arguments.py) and torchrun's --nnodes / --nproc_per_node, as planning flags.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "launcher_config_parts.hpp"
#include "launcher_config_shell.hpp"

namespace shardplan::config {
namespace {

// Arguments that carry a value and become a planning flag as written.
const std::map<std::string, std::string> kValued = {
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
    {"--num-experts", "--experts"},
    {"--moe-router-topk", "--top-k"},
    {"--vocab-size", "--vocab"},
};

// Arguments shardplan reads in its own way below (values or switches).
const std::set<std::string> kRead = {
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
    "--moe-flex-dispatcher-backend",
    // torchrun
    "--nnodes", "--nproc_per_node", "--nproc-per-node",
};

// Arguments known to change neither memory nor time as shardplan prices them (learning-rate
// schedule, data, checkpoints, logging, architecture details the model already carries, the
// launcher's rendezvous): read and set aside without a note.
const std::set<std::string> kKnownOther = {
    "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters", "--lr-decay-samples",
    "--lr-warmup-iters", "--lr-warmup-samples", "--lr-warmup-fraction", "--lr-warmup-init",
    "--lr-wsd-decay-style", "--lr-wsd-decay-iters", "--lr-wsd-decay-samples", "--weight-decay",
    "--start-weight-decay", "--end-weight-decay", "--weight-decay-incr-style", "--clip-grad",
    "--adam-beta1", "--adam-beta2", "--adam-eps", "--sgd-momentum", "--init-method-std",
    "--loss-scale", "--initial-loss-scale", "--min-loss-scale", "--loss-scale-window",
    "--hysteresis", "--rotary-base", "--use-rope-scaling", "--rotary-scaling-factor",
    "--rope-scaling-factor", "--rotary-percent", "--rotary-seq-len-interpolation-factor",
    "--use-rotary-position-embeddings", "--norm-epsilon", "--normalization",
    "--position-embedding-type", "--untie-embeddings-and-output-weights", "--disable-bias-linear",
    "--add-qkv-bias", "--attention-dropout", "--hidden-dropout", "--kv-channels", "--qk-layernorm",
    "--multi-latent-attention", "--kv-lora-rank", "--q-lora-rank", "--qk-head-dim",
    "--qk-pos-emb-head-dim", "--v-head-dim", "--max-position-embeddings",
    "--make-vocab-size-divisible-by", "--apply-layernorm-1p", "--no-position-embedding",
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
    "--data-cache-path", "--mock-data", "--num-workers", "--tokenizer-type", "--tokenizer-model",
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
    "--nodes", "--ntasks", "--ntasks-per-node", "--gpus-per-node", "--cpus-per-task",
    "--kill-on-bad-exit", "--wait", "--label", "--export", "--mpi", "--container-image",
    "--container-mounts", "--no-container-mount-home", "--exclusive", "--time", "--partition",
    "--account", "--job-name", "--output", "--error",
};

// Switches (no value): everything else takes the next word when it does not start with "--".
const std::set<std::string> kSwitches = {
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    "--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp",
    "--use-torch-fsdp2", "--optimizer-cpu-offload", "--overlap-grad-reduce", "--tp-comm-overlap",
    "--bf16", "--fp16", "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32",
    "--swiglu", "--group-query-attention", "--standalone", "--overlap-moe-expert-parallel-comm",
    "--moe-enable-deepep", "--moe-router-force-load-balancing", "--delay-wgrad-compute",
    "--cpu-offloading", "--cpu-offloading-weights", "--cpu-offloading-activations",
};

// Arguments that take every word up to the next argument (argparse nargs='*').
const std::set<std::string> kWordLists = {"--recompute-modules"};

using Args = std::map<std::string, std::string>;  // argument -> value ("" for a switch)

std::vector<std::string> plan_keys() {
  std::vector<std::string> out;
  out.reserve(kValued.size() + kRead.size());
  for (const auto& [key, flag] : kValued) out.push_back(key);
  out.insert(out.end(), kRead.begin(), kRead.end());
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
    const bool known = kValued.count(name) || kRead.count(name) || kKnownOther.count(name);
    // An unknown argument is taken to carry the next word unless that is another argument.
    const bool next_is_value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
    if (!inline_value && kWordLists.count(name)) {
      // Several words, kept comma-separated as shardplan's flag takes them.
      while (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0)
        value += (value.empty() ? "" : ",") + words[++i];
    } else if (!inline_value && !kSwitches.count(name) && next_is_value) {
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

// A value the file does not fix ("$TP" from the environment) cannot be planned.
void require_known(const Builder& b, const std::string& key, const std::string& value) {
  if (value.find('$') != std::string::npos || value.empty()) {
    b.refuse(key, fmt::format("'{}' is not a value the file fixes (set it in the script, or give "
                              "the argument a number)",
                              value));
  }
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
  } else {
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

void recompute_and_optimizer(const Args& a, Builder& b) {
  const std::string r = arg(a, "--recompute-granularity");
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

void model(const Args& a, Builder& b) {
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
  if (a.count(ffn)) b.set("--ffn-hidden", arg(a, ffn), ffn);
  if (a.count("--num-query-groups") && !a.count("--group-query-attention")) {
    b.config().settings.erase(
        std::remove_if(b.config().settings.begin(), b.config().settings.end(),
                       [](const ConfigSetting& s) { return s.flag == "--kv-heads"; }),
        b.config().settings.end());
    b.note_default("--num-query-groups without --group-query-attention: Megatron-LM uses "
                   "multi-head attention");
  }
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

// torchrun --nnodes N --nproc_per_node G: the GPUs the script starts.
void launch(const Args& a, Builder& b) {
  const std::string nodes = arg(a, "--nnodes");
  std::string per_node = arg(a, "--nproc_per_node");
  std::string per_key = "--nproc_per_node";
  if (per_node.empty()) {
    per_node = arg(a, "--nproc-per-node");
    per_key = "--nproc-per-node";
  }
  if (per_node.empty()) {
    b.note_default("no torchrun --nproc_per_node / --nnodes: the GPUs come from --gpus");
    return;
  }
  require_known(b, per_key, per_node);
  const long long g = integer(b, per_key, per_node, 1);
  long long n = 1;
  if (!nodes.empty()) {
    require_known(b, "--nnodes", nodes);
    n = integer(b, "--nnodes", nodes, 1);
  }
  b.set("--gpus-per-node", std::to_string(g), per_key);
  b.set("--gpus", std::to_string(n * g), "--nnodes x " + per_key);
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

}  // namespace

LauncherConfig read_megatron(const std::string& text, const std::string& path) {
  Builder b(ConfigFormat::megatron, path, "megatron");
  const Args a = arguments(shell_words(text), b);
  for (const auto& [key, flag] : kValued) {
    if (!a.count(key)) continue;
    require_known(b, key, arg(a, key));
    integer(b, key, arg(a, key), 0);
    b.set(flag, arg(a, key), key);
  }
  if (a.count("--moe-expert-capacity-factor")) {
    b.set("--capacity-factor", arg(a, "--moe-expert-capacity-factor"),
          "--moe-expert-capacity-factor");
  }
  if (a.count("--sequence-parallel")) b.set("--sequence-parallel", "true", "--sequence-parallel");
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
  recompute_and_optimizer(a, b);
  model(a, b);
  pipeline(a, b);
  launch(a, b);
  optimizer_instances(a, b);
  return b.take();
}

}  // namespace shardplan::config
