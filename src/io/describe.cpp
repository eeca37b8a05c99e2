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
  if (m.is_moe()) shape += fmt::format(", {} experts top-{}", m.experts, m.experts_per_token);
  return fmt::format("{} ({} params, {}, vocab {})", m.name, format_count(c.total), shape, m.vocab);
}

std::string describe_framework(const FrameworkProfile& f) {
  if (f.name.empty()) return "none named (an ideal stack: every capability, reference kernels)";
  return f.name + " (" + f.source + ")";
}

std::string describe_cluster(const ClusterSpec& c) {
  std::string s =
      fmt::format("{} x {} ({:.1f} GiB)", c.gpus, c.gpu.name, c.gpu.memory_bytes / kGiB);
  if (c.nodes() > 1) {
    // A probed profile whose inter-node tier was not measured says so where it is used.
    const bool nominal_nic = c.intra.measured && !c.nic.measured;
    s += fmt::format(", {} nodes of {}; {} inside, {} x {}{} between", c.nodes(), c.gpus_per_node,
                     c.intra.name, c.nics_per_node, c.nic.name,
                     nominal_nic ? " (nominal: not measured by the probe)" : "");
  } else {
    s += fmt::format(", {} between GPUs", c.intra.name);
  }
  return s;
}

}  // namespace shardplan
