// The notes of assumed.hpp.
#include "assumed.hpp"

#include <fmt/format.h>

#include "shardplan/error.hpp"
#include "shardplan/model.hpp"

namespace shardplan::cli {
namespace {

void note_sequence(const PlanningOptions& o, Inputs& in) {
  if (!o.seq_len.empty() || in.model.seq_len <= in.training.seq_len) return;
  in.notes.push_back(fmt::format(
      "sequence length {}: the model's own context is {}, capped at {} by default so that a "
      "preset and its config.json train alike; --seq-len sets it",
      in.training.seq_len, in.model.seq_len, kDefaultSeqLenCap));
}

void note_zero(const PlanningOptions& o, Inputs& in) {
  // Only when the plan is ZeRO-0 and nothing chose it: a --from file's stage is a choice.
  if (!o.zero.empty() || in.plan.dp <= 1 || in.plan.zero != 0) return;
  if (!o.from.empty()) {
    in.notes.push_back(fmt::format(
        "ZeRO-0 (plain data parallel): {} sets no ZeRO stage, so every data-parallel rank holds "
        "all weights, gradients and optimizer state",
        o.from));
    return;
  }
  in.notes.push_back(
      "ZeRO-0 (plain data parallel): no --zero was given, so every data-parallel rank holds all "
      "weights, gradients and optimizer state; `shardplan plan` picks a stage");
}

// --gpu with a --cluster preset whose own GPU differs: the links stay the preset's.
void note_gpu_override(const PlanningOptions& o, Inputs& in) {
  if (o.gpu.empty() || o.cluster.empty()) return;
  PlanningOptions own = o;
  own.gpu.clear();
  const ClusterSpec preset = resolve_cluster(own, in.cluster.gpus);
  if (preset.gpu.name == in.cluster.gpu.name) return;
  in.notes.push_back(fmt::format(
      "--gpu {} replaces {}'s {}: {} x {} with {}'s links ({} inside a node)", o.gpu, o.cluster,
      preset.gpu.name, in.cluster.gpus, in.cluster.gpu.name, o.cluster, in.cluster.intra.name));
}

// The probe's mpi back-end times collectives through the CPU (shared memory, sockets): a
// GPU cluster's NCCL collectives on the same nodes run far faster.
void note_cpu_links(Inputs& in) {
  for (const LinkSpec* l : {&in.cluster.intra, &in.cluster.nic}) {
    if (!l->measured || l->source.find("probe (mpi)") == std::string::npos) continue;
    in.notes.push_back(fmt::format(
        "the {} link ({}) was measured by the probe's mpi back-end, through CPU memory and "
        "sockets, not NCCL on the GPUs: its collectives are priced at what the CPU reached",
        l == &in.cluster.intra ? "inside-node" : "between-node", l->name));
  }
}

// A mixture of experts is priced with balanced routing unless the user says otherwise; real
// routing is less even, and the busiest expert rank sets every rank's step.
void note_moe_routing(Inputs& in) {
  const TrainingSpec& t = in.training;
  if (!in.model.is_moe() || t.moe_max_load > 0 || t.moe_capacity_factor > 0) return;
  in.notes.push_back(
      "MoE routing priced balanced (max-load 1: each expert rank gets its even share of tokens), "
      "as NVIDIA's published MoE benchmarks force it (Megatron-Bridge performance summary); "
      "natural routing is less even and its busiest rank sets the step: --moe-max-load F prices "
      "it (Megatron-Core's log_moe_overload_factor logs F per step); --moe-force-balance "
      "states balanced routing");
}

// A stack that can compile its loss (torchtitan) runs it eager unless told: its compile switch
// is off by default, but most runs turn it on, and the eager loss's fp32 copies are a large
// share of a small model's peak.
void note_loss(Inputs& in) {
  const FrameworkPricing& f = in.training.framework.pricing;
  if (f.compiled_logit_bytes <= 0 || in.training.compiled_loss || f.logit_bytes <= 0) return;
  in.notes.push_back(fmt::format(
      "the loss is priced eager, {:g} B per logit (its fp32 log-softmax and gradients); a run "
      "with torch.compile on its loss (torchtitan compile.enable, \"loss\" among the "
      "components) holds {:g}: --compiled-loss",
      f.logit_bytes, f.compiled_logit_bytes));
}

// A model described by flags alone takes GPT-3's conventions for what the flags leave out; each
// one is said with the flag that sets it (32 heads were once assumed for --hidden 4096 unsaid).
void note_flag_model(const PlanningOptions& o, Inputs& in) {
  if (!o.model.empty() || !o.from.empty() || o.layers.empty()) return;
  const ModelSpec& m = in.model;
  std::vector<std::string> taken;
  if (o.heads.empty()) {
    taken.push_back(fmt::format("{} attention heads of 128 (hidden / 128; --heads)", m.heads));
  }
  if (o.heads.empty() && o.kv_heads.empty())
    taken.push_back("no grouped-query attention (--kv-heads)");
  if (o.ffn_hidden.empty() && o.mlp.empty()) {
    taken.push_back(fmt::format("a 4h GeLU MLP of {} (--ffn-hidden, --mlp)", m.ffn_hidden));
  }
  if (o.vocab.empty()) taken.push_back(fmt::format("vocabulary {} (--vocab)", m.vocab));
  if (taken.empty()) return;
  std::string list;
  for (const std::string& t : taken) list += (list.empty() ? "" : ", ") + t;
  in.notes.push_back(
      "the model from --layers/--hidden takes GPT-3's conventions for what the "
      "flags leave out: " +
      list);
}

void price_at_list(const PlanningOptions& o, Inputs& in) {
  TrainingSpec& t = in.training;
  const GpuSpec& g = in.cluster.gpu;
  if (t.tokens <= 0 || !o.gpu_hour_cost.empty() || g.list_price_usd_per_gpu_hour <= 0) return;
  t.gpu_hour_cost = g.list_price_usd_per_gpu_hour;
  in.notes.push_back(
      fmt::format("cost at {}'s list price, ${:g} per GPU-hour ({}); --gpu-hour-cost sets yours",
                  g.name, g.list_price_usd_per_gpu_hour, g.list_price_source));
}

}  // namespace

void note_assumptions(const PlanningOptions& o, Inputs& in, AssumedFor what) {
  note_sequence(o, in);
  note_flag_model(o, in);
  if (what.plan_given) note_zero(o, in);
  note_gpu_override(o, in);
  note_cpu_links(in);
  note_moe_routing(in);
  note_loss(in);
  if (what.prices) price_at_list(o, in);
}

void refuse_run_flags(const PlanningOptions& o, const char* command) {
  for (const auto& [flag, value] :
       {std::pair{"--tokens", &o.tokens}, std::pair{"--gpu-hour-cost", &o.gpu_hour_cost}}) {
    if (value->empty()) continue;
    throw InputError(flag, fmt::format("'{}': `{}` times no training run; the time and cost "
                                       "to train come from estimate, plan and provision",
                                       *value, command));
  }
}

}  // namespace shardplan::cli
