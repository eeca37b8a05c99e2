// The one table of planning flags: every command registers its groups from it, `runbook` and
// `emit` ask it whether the user described a plan, and `--from FILE` fills flags through it.
#include "planning_flags.hpp"

#include <algorithm>
#include <string>

#include "shardplan/schedule.hpp"
#include "shardplan/specs.hpp"

namespace shardplan::cli {
namespace {

using O = PlanningOptions;

// "Stack that runs the plan: megatron | ...", from the framework table.
const char* framework_help() {
  static const std::string help = "Stack that runs the plan: " + framework_names(" | ") +
                                  " (default megatron); its profile sets what can run and how fast";
  return help.c_str();
}

// "Pipeline schedule: 1f1b | interleaved | ...", from the schedule table.
const char* schedule_help() {
  static const std::string help = "Pipeline schedule: " + schedule_names(" | ");
  return help.c_str();
}

// "What --recompute selective redoes, Megatron-Core's modules by name: core_attn | ...".
const char* recompute_modules_help() {
  static const std::string help =
      "With --recompute selective, the modules Megatron-Core recomputes (--recompute-modules), "
      "comma-separated: " +
      recompute_module_names(" | ") + " (default core_attn)";
  return help.c_str();
}

// "fp32 | bf16 | ...", from the precision table; what each recipe is, docs/precisions.md.
const char* precision_help() {
  static const std::string help =
      precision_names(" | ") +
      " (default bf16 mixed; bf16-pure: no fp32 master; fp8: the framework's default FP8 "
      "recipe; mxfp8 and nvfp4 need Blackwell; docs/precisions.md)";
  return help.c_str();
}

// One row per flag, in the order --help lists them.
const std::vector<PlanningFlag> kTable = {
    // Model
    {"Model", "--model", "Model preset, Hugging Face config.json or shardplan model JSON",
     &O::model},
    {"Model", "--params", "Parameter count only, e.g. 7e9 or 7B (no activations)", &O::params},
    {"Model", "--layers", "Transformer layers (overrides the model)", &O::layers},
    {"Model", "--hidden", "Hidden size", &O::hidden},
    {"Model", "--heads", "Attention heads", &O::heads},
    {"Model", "--kv-heads", "Key/value heads (GQA); default = heads", &O::kv_heads},
    {"Model", "--ffn-hidden", "MLP width; default 4 x hidden", &O::ffn_hidden},
    {"Model", "--vocab", "Vocabulary size; default 51200", &O::vocab},
    {"Model", "--mlp", "MLP kind: gelu | swiglu | geglu", &O::mlp},
    {"Model", "--experts", "Mixture-of-experts: experts per layer", &O::experts},
    {"Model", "--top-k", "Mixture-of-experts: experts per token", &O::top_k},
    {"Model", "--norm", "Normalization: layernorm | rmsnorm (flags alone: layernorm)", &O::norm},
    {"Model", "--positions",
     "Position embedding: learned | rotary | alibi | none (flags alone: learned, a table of "
     "max-positions x hidden)",
     &O::positions},
    {"Model", "--embeddings", "Input embedding and LM head: tied | untied (flags alone: tied)",
     &O::embeddings},
    {"Model", "--bias", "Linear-layer biases: all | qkv | none (flags alone: all)", &O::bias},
    // Training
    {"Training", "--seq-len", "Sequence length (default: the model's)", &O::seq_len},
    {"Training", "--global-batch",
     "Sequences per optimizer step (default: 4M tokens' worth, rounded up to a multiple of dp x "
     "micro-batch)",
     &O::global_batch},
    {"Training", "--precision", precision_help(), &O::precision},
    {"Training", "--optimizer", "adamw | sgd | adafactor | adam8bit (default adamw)",
     &O::optimizer},
    {"Training", "--attention", "flash | standard (default flash)", &O::attention},
    {"Training", "--fp32-grads", "Megatron-LM's fp32 gradient buffers (18 B/param)", nullptr,
     &O::fp32_grads},
    {"Training", "--no-overlap", "Do not overlap gradient/parameter collectives with compute",
     nullptr, &O::no_overlap},
    {"Training", "--tp-comm-overlap",
     "Overlap tensor-parallel comm with GEMMs (Transformer Engine)", nullptr, &O::tp_comm_overlap},
    {"Training", "--grad-sync",
     "ZeRO-2/3 gradient reduction under accumulation: framework (its default: deferred under "
     "torchtitan's pipeline schedules, else every micro-batch) | every-micro-batch | deferred "
     "(once after the last micro-batch, unsharded gradients held meanwhile: FSDP no_sync / "
     "FSDP2 set_requires_gradient_sync(False))",
     &O::grad_sync},
    {"Training", "--framework", framework_help(), &O::framework},
    {"Training", "--fragmentation", "Allocator reserve as a share of activations (default 0.05)",
     &O::fragmentation},
    {"Training", "--tokens", "Training budget in tokens, e.g. 2T, for time and cost to train",
     &O::tokens},
    {"Training", "--capacity-factor",
     "MoE expert capacity factor, experts padded to it (default: dropless, routing assumed "
     "balanced)",
     &O::capacity_factor},
    {"Training", "--moe-max-load",
     "MoE: the busiest expert rank's tokens over its even share (e.g. 1.2); it sets the expert "
     "GEMMs and all-to-alls every rank waits for (default 1: balanced)",
     &O::moe_max_load},
    {"Training", "--moe-force-balance",
     "MoE: routing forced balanced, as vendor benchmarks run (Megatron-Core "
     "--moe-router-force-load-balancing); the same as --moe-max-load 1",
     nullptr, &O::moe_force_balance},
    {"Training", "--compiled-loss",
     "The loss runs under torch.compile (torchtitan compile.enable with its 'loss' component): "
     "the fused loss holds the framework profile's compiled bytes per logit",
     nullptr, &O::compiled_loss},
    {"Training", "--full-vocab-loss",
     "Under TP, the LM head's logits are all-gathered and every TP rank runs the loss over the "
     "whole vocabulary (torchtitan parallelism.disable_loss_parallel; an LM head that gathers "
     "its output): s x b x V logits per GPU, not V/tp, and their all-gather on the LM head's "
     "stage",
     nullptr, &O::full_vocab_loss},
    {"Training", "--cuda-graphs",
     "none | scoped (Transformer Engine's per-module graphs, e.g. Megatron-Core "
     "--cuda-graph-impl transformer_engine --cuda-graph-modules attn moe_router) | full (whole "
     "layers, or full_iteration): the share of the fixed costs per layer the framework profile "
     "says graphs leave (default none)",
     &O::cuda_graphs},
    {"Training", "--moe-fp8-dispatch",
     "MoE: dispatch tokens in fp8 with 1x128 scales, combine in bf16 (DeepSeek-V3)", nullptr,
     &O::moe_fp8_dispatch},
    {"Training", "--moe-dispatcher",
     "MoE: alltoall (one copy per token and expert) | deepep (one copy per token and remote "
     "node, forwarded over NVLink; node-limited routing applies) (default alltoall)",
     &O::moe_dispatcher},
    {"Training", "--gpu-hour-cost", "Price of one GPU-hour, for the cost to train",
     &O::gpu_hour_cost},
    // Cluster
    {"Cluster", "--cluster", "Cluster preset (dgx-h100 ...) or profile file from `shardplan probe`",
     &O::cluster},
    {"Cluster", "--gpu", "GPU preset or profile file (default H100-SXM)", &O::gpu},
    {"Cluster", "--gpus", "Total GPUs", &O::gpus},
    {"Cluster", "--gpus-per-node", "GPUs per node (default 8)", &O::gpus_per_node},
    {"Cluster", "--gpus-per-domain",
     "GPUs per scale-up (NVLink) domain (default: the cluster's, or the node)",
     &O::gpus_per_domain},
    {"Cluster", "--nics-per-node", "Scale-out NICs per node", &O::nics_per_node},
    {"Cluster", "--intra", "Link inside a node: preset (nvlink4 ...) or bandwidth (900GB/s)",
     &O::intra},
    {"Cluster", "--inter", "Link between nodes, per NIC: preset (ib-ndr, 10gbe ...) or bandwidth",
     &O::inter},
    {"Cluster", "--link", "One flat link between all GPUs: preset or bandwidth, used as given",
     &O::link},
    {"Cluster", "--headroom",
     "Memory each GPU keeps free, a size (8GiB) or a share of the device (10%): a plan fits "
     "when its reserved peak leaves at least this much (default 0)",
     &O::headroom},
    // Plan: every row but --allow-tp-across-nodes describes the plan itself.
    {"Plan", "--dp", "Data-parallel degree (default: GPUs / (tp x pp x cp))", &O::dp, nullptr,
     true},
    {"Plan", "--tp", "Tensor-parallel degree", &O::tp, nullptr, true},
    {"Plan", "--pp", "Pipeline-parallel degree", &O::pp, nullptr, true},
    {"Plan", "--cp", "Context-parallel degree", &O::cp, nullptr, true},
    {"Training", "--cp-kind",
     "How context parallelism splits attention: ring (K/V passed around the ring behind the "
     "attention: Megatron-Core p2p, torchtitan) | ulysses (all-to-alls to a head split and back: "
     "DeepSpeed sequence_parallel_size, Megatron-Core --cp-comm-type a2a) (default ring)",
     &O::cp_kind},
    {"Plan", "--ep", "Expert-parallel degree (MoE)", &O::ep, nullptr, true},
    {"Plan", "--expert-tp",
     "Ranks splitting each expert (Megatron-Core --expert-tensor-parallel-size); default: --tp",
     &O::expert_tp, nullptr, true},
    {"Plan", "--zero", "ZeRO stage 0-3 (3 = FSDP full shard)", &O::zero, nullptr, true},
    {"Plan", "--dp-shard",
     "Hybrid sharding (HSDP): ZeRO shards over groups of N data-parallel ranks and replicates "
     "across dp / N (FSDP HYBRID_SHARD, torchtitan data_parallel_shard_degree; default: shard "
     "over all of dp)",
     &O::dp_shard, nullptr, true},
    {"Plan", "--micro-batch", "Sequences per micro-batch (default 1)", &O::micro_batch, nullptr,
     true},
    {"Plan", "--recompute", "Activation recompute: none | selective | full", &O::recompute, nullptr,
     true},
    {"Plan", "--recompute-modules", recompute_modules_help(), &O::recompute_modules, nullptr, true},
    {"Plan", "--sequence-parallel", "Megatron sequence parallelism (needs tp > 1)", nullptr,
     &O::sequence_parallel, true},
    {"Plan", "--interleave", "Virtual pipeline stages per device", &O::interleave, nullptr, true},
    {"Plan", "--moe-a2a-overlap",
     "MoE: hide expert all-to-alls behind another micro-batch's compute (Megatron-Core "
     "--overlap-moe-expert-parallel-comm; torchtitan under DualPipeV)",
     nullptr, &O::moe_a2a_overlap, true},
    {"Plan", "--schedule", schedule_help(), &O::schedule, nullptr, true},
    {"Plan", "--first-stage-layers",
     "Transformer layers of the first (virtual) pipeline stage; the rest split evenly",
     &O::first_stage_layers, nullptr, true},
    {"Plan", "--last-stage-layers", "Transformer layers of the last (virtual) pipeline stage",
     &O::last_stage_layers, nullptr, true},
    {"Plan", "--allow-tp-across-nodes", "Let tensor parallel span nodes", nullptr,
     &O::allow_tp_across_nodes, false, "Let tensor parallel span nodes"},
    {"Plan", "--offload",
     "Keep in host memory or on NVMe: optimizer, params, activations (comma list) or none "
     "(DeepSpeed ZeRO-Offload / ZeRO-Infinity, FSDP CPU offload)",
     &O::offload, nullptr, true,
     "Also search plans that offload these (comma list: optimizer, params, activations); without "
     "it, offload is searched only when nothing else fits"},
    {"Plan", "--offload-to", "Where --offload keeps them: cpu | nvme (default cpu)", &O::offload_to,
     nullptr, true, "Where --offload keeps them: cpu | nvme"},
    {"Plan", "--offload-activation-layers",
     "Send the saved activations of N layers per pipeline stage to host memory after their "
     "forward and fetch them for backward, no recompute (Megatron-Core --cpu-offloading "
     "--cpu-offloading-num-layers; over NVLink-C2C on GB200 / GB300, PCIe elsewhere)",
     &O::offload_activation_layers, nullptr, true,
     "Also search plans that offload the saved activations of N layers to host memory "
     "(Megatron-Core --cpu-offloading-num-layers)"},
};

void add_row(CLI::App& app, PlanningOptions& o, const PlanningFlag& f, const char* help) {
  CLI::Option* opt =
      f.text ? app.add_option(f.name, o.*f.text, help) : app.add_flag(f.name, o.*f.on, help);
  opt->group(f.group);
}

}  // namespace

const std::vector<PlanningFlag>& planning_flags() {
  return kTable;
}

const PlanningFlag* find_planning_flag(std::string_view name) {
  const auto it = std::find_if(kTable.begin(), kTable.end(),
                               [&](const PlanningFlag& f) { return name == f.name; });
  return it == kTable.end() ? nullptr : &*it;
}

bool flag_given(const PlanningOptions& o, const PlanningFlag& f) {
  return f.text ? !(o.*f.text).empty() : o.*f.on;
}

void add_flag_group(CLI::App& app, PlanningOptions& o, std::string_view group) {
  for (const PlanningFlag& f : kTable)
    if (group == f.group) add_row(app, o, f, f.help);
}

void add_search_plan_options(CLI::App& app, PlanningOptions& o, bool with_offload) {
  for (const PlanningFlag& f : kTable) {
    if (f.search_help == nullptr) continue;
    if (!with_offload && f.text != nullptr) continue;  // the offload pair
    add_row(app, o, f, f.search_help);
  }
}

std::vector<std::string> plan_flags_in(const PlanningOptions& o) {
  std::vector<std::string> out;
  for (const PlanningFlag& f : kTable)
    if (f.picks_plan && flag_given(o, f)) out.emplace_back(f.name);
  return out;
}

void add_model_options(CLI::App& app, PlanningOptions& o) {
  add_flag_group(app, o, "Model");
}

void add_training_options(CLI::App& app, PlanningOptions& o) {
  add_flag_group(app, o, "Training");
}

void add_cluster_options(CLI::App& app, PlanningOptions& o) {
  add_flag_group(app, o, "Cluster");
}

void add_plan_options(CLI::App& app, PlanningOptions& o) {
  add_flag_group(app, o, "Plan");
}

}  // namespace shardplan::cli
