// Text rendering: number formats and the fixed-width table every subcommand prints.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/model.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/render.hpp"
#include "shardplan/units.hpp"

namespace shardplan {

std::string format_gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / kGiB);
}

std::string format_bytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_rate(double bytes_per_s) {
  const double gb = bytes_per_s / 1e9;
  if (gb >= 100) return fmt::format("{:.0f} GB/s", gb);
  if (gb >= 1) return fmt::format("{:.3g} GB/s", gb);
  return fmt::format("{:.3g} MB/s", bytes_per_s / 1e6);
}

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s == 0) return "0";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 3 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string format_percent(double share) {
  if (!std::isfinite(share)) return "-";
  return share * 100 < 9.95 ? fmt::format("{:.1f}%", share * 100)
                            : fmt::format("{:.0f}%", share * 100);
}

std::string format_count(double n) {
  if (n >= 1e12) return fmt::format("{:.2f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.0f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string format_flops(double flops_per_s) {
  return fmt::format("{:.0f} TFLOP/s", flops_per_s / kTera);
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void Table::add_rule() {
  rows_.emplace_back();
}

std::string Table::render(const std::string& indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) width[i] = columns_[i].header.size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string& cell = cells[i];
      const size_t pad = width[i] - cell.size();
      const bool right = columns_[i].align == Align::right;
      if (i > 0) out += "  ";
      if (right) out.append(pad, ' ');
      out += cell;
      if (!right && i + 1 < columns_.size()) out.append(pad, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> header;
  size_t total = 0;
  for (size_t i = 0; i < columns_.size(); ++i) {
    header.push_back(columns_[i].header);
    total += width[i] + (i > 0 ? 2 : 0);
  }
  std::string out = line(header);
  const std::string rule = indent + std::string(total, '-') + "\n";
  out += rule;
  for (const auto& row : rows_) out += row.empty() ? rule : line(row);
  return out;
}

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

std::vector<MemoryLine> transient_lines(const StageMemory& s) {
  std::vector<MemoryLine> out;
  if (s.recompute_working_bytes > 0) {
    out.push_back({"recompute working set", s.recompute_working_bytes,
                   "full recompute rebuilds one layer's activations during its backward"});
  }
  if (s.logits_bytes > 0) {
    out.push_back({"logits", s.logits_bytes,
                   "logits at the loss's peak (last stage; bytes per logit from the framework)"});
  }
  if (s.gathered_layers_bytes > 0) {
    out.push_back({"gathered layers", s.gathered_layers_bytes,
                   "ZeRO-3 / FSDP: the current and the prefetched layer, unsharded"});
    out.push_back({"unsharded layer gradient", s.unsharded_grad_bytes,
                   "ZeRO-3 / FSDP: a layer's gradient until its reduce-scatter"});
  }
  return out;
}

std::vector<MemoryLine> overhead_lines(const StageMemory& s, double fragmentation) {
  std::vector<MemoryLine> out;
  out.push_back(
      {"CUDA context", s.context_bytes, "CUDA context and library workspaces (GPU profile)"});
  if (s.nccl_communicators > 0) {
    out.push_back(
        {"NCCL buffers", s.nccl_bytes,
         fmt::format("{} communicator{} x 128 MiB (16 channels x 2 peers x NCCL_BUFFSIZE 4 MiB)",
                     s.nccl_communicators, s.nccl_communicators == 1 ? "" : "s")});
  }
  out.push_back(
      {"allocator fragmentation", s.fragmentation_bytes,
       fmt::format("{:.0f}% of activations and transients (caching-allocator free blocks; "
                   "--fragmentation)",
                   fragmentation * 100)});
  return out;
}

std::string render_memory(const MemoryBreakdown& mem, const ModelSpec& model,
                          const TrainingSpec& tr, const ParallelPlan& plan,
                          const ClusterSpec& cluster) {
  std::string out;
  out += fmt::format("model    {}\n", describe_model(model));
  out += fmt::format("cluster  {}\n", describe_cluster(cluster));
  out += fmt::format("plan     {}\n", describe(plan));
  out += fmt::format("training {}, {}, sequence {}, global batch {}\n\n",
                     tr.precision == Precision::fp32
                         ? "fp32"
                         : std::string(to_string(tr.precision)) + " mixed precision",
                     to_string(tr.optimizer), tr.seq_len, tr.global_batch);
  out += render_memory_table(mem, plan);
  return out;
}

std::string render_memory_table(const MemoryBreakdown& mem, const ParallelPlan& plan) {
  const StageMemory& w = mem.worst();
  const double capacity = mem.capacity_bytes;
  const StateBytes& b = mem.bytes_per_param;
  std::string out;
  const std::string where =
      plan.pp > 1 ? fmt::format(" (pipeline stage {} of {}, the most loaded)", w.stage, plan.pp)
                  : "";
  out += fmt::format("Memory per device{}\n", where);
  Table t({{"", Table::Align::left},
           {"GiB"},
           {"B/param"},
           {"of device"},
           {"what", Table::Align::left}});
  const double params = w.params;
  auto gib = [](double bytes) { return fmt::format("{:.2f}", bytes / kGiB); };
  auto per_param = [&](double bytes) {
    return params > 0 ? fmt::format("{:.2f}", bytes / params) : std::string("-");
  };
  auto share = [&](double bytes) { return format_percent(bytes / capacity); };
  const double replicas = static_cast<double>(plan.dp) * plan.cp;
  auto sharding = [&](int stage) {
    return plan.zero >= stage && replicas > 1
               ? fmt::format(", sharded 1/{:g} (ZeRO-{})", replicas, plan.zero)
               : std::string();
  };
  t.add_row({"weights", gib(w.weights_bytes), per_param(w.weights_bytes), share(w.weights_bytes),
             fmt::format("{:g} B/param{}", b.weights, sharding(3))});
  t.add_row({"gradients", gib(w.gradients_bytes), per_param(w.gradients_bytes),
             share(w.gradients_bytes), fmt::format("{:g} B/param{}", b.gradients, sharding(2))});
  t.add_row({"optimizer state", gib(w.optimizer_bytes), per_param(w.optimizer_bytes),
             share(w.optimizer_bytes), fmt::format("{:.3g} B/param{}", b.optimizer, sharding(1))});
  if (mem.activations_known) {
    t.add_row({"activations", gib(w.activations_bytes), "", share(w.activations_bytes),
               fmt::format("{:.3g} layer-micro-batches in flight, recompute {}", w.layers_in_flight,
                           to_string(plan.recompute))});
  } else {
    t.add_row({"activations", "unknown", "", "",
               "needs an architecture (--model or --layers/--hidden/--heads)"});
  }
  for (const MemoryLine& x : transient_lines(w)) {
    t.add_row({x.label, gib(x.bytes), "", share(x.bytes), x.assumption});
  }
  for (const MemoryLine& x : overhead_lines(w, mem.fragmentation)) {
    t.add_row({x.label, gib(x.bytes), "", share(x.bytes), x.assumption});
  }
  t.add_rule();
  t.add_row(
      {"total", gib(w.total_bytes()), per_param(w.total_bytes()), share(w.total_bytes()), ""});
  out += t.render();
  const double margin = mem.margin_bytes();
  out += fmt::format("\n{}: {} of {} on a {}; {} {}.\n", mem.fits ? "FITS" : "DOES NOT FIT",
                     format_gib(w.total_bytes()), format_gib(capacity), "device",
                     format_gib(std::fabs(margin)), margin >= 0 ? "to spare" : "over");
  if (w.offloaded_bytes > 0 || w.host_bytes > 0) {
    out += fmt::format(
        "Offload: {} off each device; host memory {} per GPU, {} per node of {}{}{}.\n",
        format_gib(w.offloaded_bytes), format_gib(w.host_bytes),
        format_gib(mem.host_bytes_per_node), format_gib(mem.host_capacity_bytes),
        w.nvme_bytes > 0 ? fmt::format(", NVMe {} per GPU", format_gib(w.nvme_bytes)) : "",
        mem.host_fits ? "" : ": DOES NOT FIT in host memory");
  }
  if (plan.pp > 1) {
    out += "\nPer pipeline stage\n";
    Table s({{"stage"},
             {"params"},
             {"states GiB"},
             {"activations GiB"},
             {"total GiB"},
             {"fits", Table::Align::left}});
    for (const StageMemory& st : mem.stages) {
      s.add_row({std::to_string(st.stage), format_count(st.params), gib(st.model_states_bytes()),
                 gib(st.activations_bytes), gib(st.total_bytes()),
                 st.total_bytes() <= capacity ? "yes" : "no"});
    }
    out += s.render();
  }
  if (!mem.activations_known) {
    out +=
        "note: activations unknown: only the parameter count was given; pass --model or "
        "--layers/--hidden/--heads for activation memory\n";
  }
  return out;
}

}  // namespace shardplan
