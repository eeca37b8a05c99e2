// One-line descriptions of the model, the cluster and the framework profile.
#include "shardplan/describe.hpp"

#include <fmt/format.h>

#include "shardplan/model.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

std::string describe_model(const ModelSpec& m) {
  const ParamCounts c = count_params(m);
  if (!m.has_architecture())
    return fmt::format("{} parameters (no architecture given)", format_count(c.total));
  std::string shape = fmt::format("L{} h{} a{}", m.layers, m.hidden, m.heads);
  if (m.kv_heads != m.heads) shape += fmt::format(" kv{}", m.kv_heads);
  shape += fmt::format(", {} {}", to_string(m.mlp), m.ffn_hidden);
  shape += hybrid_mixers(m);
  if (m.is_moe()) shape += fmt::format(", {} experts top-{}", m.experts, m.experts_per_token);
  return fmt::format("{} ({} params, {}, vocab {})", m.name, format_count(c.total), shape, m.vocab);
}

std::string describe_framework(const FrameworkProfile& f) {
  if (f.name.empty()) return "none named (an ideal stack: every capability, reference kernels)";
  return f.name + " (" + f.source + ")";
}

std::string describe_precision(const TrainingSpec& tr) {
  const Precision p = tr.precision;
  const PrecisionRecipe& r = tr.recipe;
  if (p == Precision::fp8 && r.id != p) {
    // The alias says which recipe it priced.
    return fmt::format("fp8 mixed precision ({}, {}'s default)", r.name,
                       tr.framework.name.empty() ? std::string("the stack") : tr.framework.name);
  }
  // A spec whose recipe is not the one its precision names (built by hand): the name alone.
  if (r.id != p) return std::string(to_string(p)) + " mixed precision";
  // The row's title; a low-precision recipe also says which row priced it.
  return r.low_precision() ? r.title + " (" + r.source + ")" : r.title;
}

std::string precision_warning(Precision p) {
  if (p != Precision::bf16_pure) return "";
  return "pure bf16 keeps no fp32 master weights: an AdamW update smaller than 2^-8 of "
         "its weight rounds away in bf16, which can stall or slow convergence (Zamirai et al. "
         "2020, \"Revisiting BFloat16 Training\", arXiv:2010.06192); fine-tuning recipes "
         "(torchtune full_finetune_distributed) accept this to halve the model state; use bf16 "
         "(mixed) for pretraining";
}

namespace {

// " (measured between CPU processes)" after a link a probe measured without GPUs.
std::string cpu_mark(const LinkSpec& l) {
  return l.medium.empty() ? "" : " (measured between CPU processes, not GPUs)";
}

std::string cpu_link_note(const LinkSpec& l, const char* which, const char* scope,
                          const ClusterSpec& c) {
  return fmt::format(
      "the {} link {} ({:.3g} GB/s bus bandwidth) was measured by shardplan probe over {}, not "
      "between {} GPUs: every communication time {} is priced at that CPU figure (probe the "
      "GPUs with --backend nccl to price them)",
      which, l.name, l.busbw_bytes_per_s / kGB, l.medium, c.gpu.name, scope);
}

}  // namespace

std::string headroom_clause(const ClusterSpec& c) {
  if (c.headroom_bytes <= 0) return "";
  return fmt::format(" less the {} headroom kept free", format_gib(c.headroom_bytes));
}

std::string describe_cluster(const ClusterSpec& c) {
  const std::string kept =
      c.headroom_bytes > 0 ? fmt::format(", {:.1f} GiB of it kept free", c.headroom_bytes / kGiB)
                           : "";
  std::string s = fmt::format("{} x {} ({:.1f} GiB{})", c.gpus, c.gpu.name,
                              c.gpu.memory_bytes / kGiB, kept);
  if (c.nodes() > 1) {
    // A probed profile whose inter-node tier was not measured says so where it is used.
    const bool nominal_nic = c.intra.measured && !c.nic.measured;
    s += fmt::format(", {} nodes of {}; {}{} inside, {} x {}{}{} between", c.nodes(),
                     c.gpus_per_node, c.intra.name, cpu_mark(c.intra), c.nics_per_node, c.nic.name,
                     cpu_mark(c.nic), nominal_nic ? " (nominal: not measured by the probe)" : "");
  } else {
    s += fmt::format(", {}{} between GPUs", c.intra.name, cpu_mark(c.intra));
  }
  if (c.rack_scale()) {
    // A scale-up domain across hosts (NVL72): how many, and a partial one named.
    const int full = c.gpus / c.domain_gpus(), rest = c.gpus % c.domain_gpus();
    s += fmt::format("; {} NVLink domain(s) of {} GPUs", c.domains(), c.domain_gpus());
    if (rest > 0) s += fmt::format(" ({} full, one of {})", full, rest);
  }
  return s;
}

std::vector<std::string> cluster_notes(const ClusterSpec& c) {
  std::vector<std::string> notes;
  if (c.rack_scale() && c.gpus % c.domain_gpus() != 0) {
    notes.push_back(fmt::format(
        "{} GPUs fill {} NVLink domain(s) of {} and {} GPUs of another: groups placed there "
        "share a partial rack; --gpus {} fills whole domains",
        c.gpus, c.gpus / c.domain_gpus(), c.domain_gpus(), c.gpus % c.domain_gpus(),
        c.gpus >= c.domain_gpus()
            ? fmt::format("{} or {}", c.gpus / c.domain_gpus() * c.domain_gpus(),
                          c.domains() * c.domain_gpus())
            : std::to_string(c.domain_gpus())));
  }
  if (!c.intra.medium.empty() && c.gpus_per_node > 1 && c.gpus > 1) {
    notes.push_back(cpu_link_note(c.intra, "intra-node", "inside a node", c));
  }
  if (!c.nic.medium.empty() && c.nodes() > 1)
    notes.push_back(cpu_link_note(c.nic, "inter-node", "between nodes", c));
  return notes;
}

}  // namespace shardplan
