// The memory breakdown as text and JSON: the per-device table with the assumption behind each
// line, the per-stage table, and the JSON of `memory --json` (key names are the --json contract).
#include "shardplan/render_memory.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "shardplan/describe.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/table.hpp"
#include "shardplan/units.hpp"

namespace shardplan {
namespace {

/// A labelled memory line with the assumption its size rests on.
struct MemoryLine {
  std::string label;
  double bytes = 0;
  std::string assumption;
};

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
                   s.params_kept_gathered
                       ? "ZeRO-3 / FSDP without reshard after forward (pipeline stages): every "
                         "layer of the stage, unsharded, from its forward to its backward"
                       : "ZeRO-3 / FSDP: the current and the prefetched layer, unsharded"});
  }
  if (s.unsharded_grad_bytes > 0) {
    out.push_back({"unsharded layer gradient", s.unsharded_grad_bytes,
                   "ZeRO-3 / FSDP: a layer's gradient until its reduce-scatter"});
  }
  if (s.accumulated_grad_bytes > 0) {
    out.push_back({"unsharded accumulated gradients", s.accumulated_grad_bytes,
                   "gradient sync deferred to the last micro-batch: the stage's gradients, "
                   "unsharded, held across micro-batches"});
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
  if (s.ep_buffer_bytes > 0) {
    out.push_back({"EP communication buffers", s.ep_buffer_bytes,
                   fmt::format("DeepEP's NVLink and RDMA buffers as Megatron-Core's get_buffer "
                               "sizes them (DeepEP's Config size hints, {} SMs)",
                               kDeepEpDefaultSms)});
  }
  out.push_back(
      {"allocator fragmentation", s.fragmentation_bytes,
       fmt::format("{:.0f}% of activations and transients (caching-allocator free blocks; "
                   "--fragmentation)",
                   fragmentation * 100)});
  return out;
}

std::string gib(double bytes) {
  return fmt::format("{:.2f}", bytes / kGiB);
}

// The most loaded device's memory, line by line: size, bytes per parameter, share of the device
// and what each size assumes.
Table device_table(const MemoryBreakdown& mem, const ParallelPlan& plan) {
  const StageMemory& w = mem.worst();
  const double capacity = mem.capacity_bytes;
  const StateBytes& b = mem.bytes_per_param;
  Table t({{"", Table::Align::left},
           {"GiB"},
           {"B/param"},
           {"of device"},
           {"what", Table::Align::left}});
  const double params = w.params;
  auto per_param = [&](double bytes) {
    return params > 0 ? fmt::format("{:.2f}", bytes / params) : std::string("-");
  };
  auto share = [&](double bytes) { return format_percent(bytes / capacity); };
  // ZeRO shards over the shard group (all of dp unless hybrid-sharded) x cp.
  const double replicas = static_cast<double>(plan.shard_degree()) * plan.cp;
  auto sharding = [&](int stage) {
    return plan.zero >= stage && replicas > 1
               ? fmt::format(", sharded 1/{:g} (ZeRO-{}{})", replicas, plan.zero,
                             plan.hybrid_shard() ? ", HSDP" : "")
               : std::string();
  };
  t.add_row({"weights", gib(w.weights_bytes), per_param(w.weights_bytes), share(w.weights_bytes),
             fmt::format("{:g} B/param{}", b.weights, sharding(3))});
  if (w.weight_copies_bytes > 0) {
    // The precision recipe's extra copies (profiles/precisions/*.json bytes.weight_copies).
    t.add_row({"low-precision weight copies", gib(w.weight_copies_bytes),
               per_param(w.weight_copies_bytes), share(w.weight_copies_bytes),
               fmt::format("{:.4g} B/param, the precision recipe's{}", b.weight_copies,
                           sharding(3))});
  }
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
  t.add_row({"allocated", gib(w.allocated_bytes()), per_param(w.allocated_bytes()),
             share(w.allocated_bytes()), "tensors, context and NCCL buffers at the peak"});
  t.add_row({"total", gib(w.total_bytes()), per_param(w.total_bytes()),
             share(w.total_bytes()), "what the caching allocator reserves: allocated + fragmentation"});
  return t;
}

}  // namespace

std::string spare_text(const MemoryBreakdown& mem) {
  const double margin = mem.margin_bytes();
  // With --headroom: whether the spare covers it (a plan that does not fit only for the
  // headroom says so).
  const std::string room =
      mem.headroom_bytes <= 0 ? ""
      : margin >= mem.headroom_bytes
          ? fmt::format(", {} beyond the {} headroom asked", format_gib(margin - mem.headroom_bytes),
                        format_gib(mem.headroom_bytes))
          : fmt::format(", {} short of the {} headroom asked",
                        format_gib(mem.headroom_bytes - margin), format_gib(mem.headroom_bytes));
  return fmt::format("{} {}{}", format_gib(std::fabs(margin)), margin >= 0 ? "to spare" : "over",
                     room);
}

namespace {

// "FITS: ... to spare." and, with offload, what moved off the device and whether the host holds it.
std::string verdict_lines(const MemoryBreakdown& mem) {
  const StageMemory& w = mem.worst();
  std::string out = fmt::format("\n{}: {} of {} on a {}; {}.\n", mem.fits ? "FITS" : "DOES NOT FIT",
                                format_gib(w.total_bytes()), format_gib(mem.capacity_bytes),
                                "device", spare_text(mem));
  if (w.offloaded_bytes > 0 || w.host_bytes > 0) {
    out += fmt::format(
        "Offload: {} off each device; host memory {} per GPU, {} per node of {}{}{}.\n",
        format_gib(w.offloaded_bytes), format_gib(w.host_bytes),
        format_gib(mem.host_bytes_per_node), format_gib(mem.host_capacity_bytes),
        w.nvme_bytes > 0 ? fmt::format(", NVMe {} per GPU", format_gib(w.nvme_bytes)) : "",
        mem.host_fits ? "" : ": DOES NOT FIT in host memory");
  }
  return out;
}

std::string stage_table(const MemoryBreakdown& mem) {
  Table s({{"stage"},
           {"params"},
           {"states GiB"},
           {"activations GiB"},
           {"total GiB"},
           {"fits", Table::Align::left}});
  for (const StageMemory& st : mem.stages) {
    s.add_row({std::to_string(st.stage), format_count(st.params), gib(st.model_states_bytes()),
               gib(st.activations_bytes), gib(st.total_bytes()),
               st.total_bytes() <= mem.capacity_bytes ? "yes" : "no"});
  }
  return "\nPer pipeline stage\n" + s.render();
}

nlohmann::json lines_json(const std::vector<MemoryLine>& lines) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& l : lines)
    a.push_back({{"label", l.label}, {"bytes", l.bytes}, {"assumption", l.assumption}});
  return a;
}

nlohmann::json stage_json(const StageMemory& s, bool activations_known, double fragmentation) {
  auto known = [&](double v) { return activations_known ? nlohmann::json(v) : nlohmann::json(); };
  return {{"stage", s.stage},
          {"params", s.params},
          {"weights_bytes", s.weights_bytes},
          {"weight_copies_bytes", s.weight_copies_bytes},
          {"gradients_bytes", s.gradients_bytes},
          {"optimizer_bytes", s.optimizer_bytes},
          {"activations_bytes", known(s.activations_bytes)},
          {"layer_activations_bytes", known(s.layer_activations_bytes)},
          {"transient_bytes", s.transient_bytes()},
          {"overhead_bytes", s.overhead_bytes()},
          {"ep_buffer_bytes", s.ep_buffer_bytes},
          {"total_bytes", s.total_bytes()},
          {"allocated_bytes", s.allocated_bytes()},
          {"reserved_bytes", s.total_bytes()},
          {"layers_in_flight", s.layers_in_flight},
          {"transients", lines_json(transient_lines(s))},
          {"overheads", lines_json(overhead_lines(s, fragmentation))}};
}

}  // namespace

std::string render_memory(const MemoryBreakdown& mem, const ModelSpec& model,
                          const TrainingSpec& tr, const ParallelPlan& plan,
                          const ClusterSpec& cluster) {
  std::string out;
  out += fmt::format("model    {}\n", describe_model(model));
  out += fmt::format("cluster  {}\n", describe_cluster(cluster));
  out += fmt::format("plan     {}\n", describe(plan));
  out += fmt::format("training {}, {}, sequence {}, global batch {}\n\n",
                     describe_precision(tr), to_string(tr.optimizer), tr.seq_len,
                     tr.global_batch);
  out += render_memory_table(mem, plan);
  return out;
}

std::string render_memory_table(const MemoryBreakdown& mem, const ParallelPlan& plan) {
  const std::string where = plan.pp > 1 ? fmt::format(" (pipeline stage {} of {}, the most loaded)",
                                                      mem.worst().stage, plan.pp)
                                        : "";
  std::string out = fmt::format("Memory per device{}\n", where);
  out += device_table(mem, plan).render();
  out += verdict_lines(mem);
  if (plan.pp > 1) out += stage_table(mem);
  if (!mem.activations_known) {
    out +=
        "note: activations unknown: only the parameter count was given; pass --model or "
        "--layers/--hidden/--heads for activation memory\n";
  }
  return out;
}

nlohmann::json to_json(const MemoryBreakdown& m) {
  const StageMemory& w = m.worst();
  nlohmann::json j = stage_json(w, m.activations_known, m.fragmentation);
  j.erase("stage");
  j["worst_stage"] = w.stage;
  j["capacity_bytes"] = m.capacity_bytes;
  j["fits"] = m.fits;
  j["margin_bytes"] = m.margin_bytes();
  j["headroom_bytes"] = m.headroom_bytes;
  j["model_states_bytes"] = w.model_states_bytes();
  j["bytes_per_param"] = {{"weights", m.bytes_per_param.weights},
                          {"weight_copies", m.bytes_per_param.weight_copies},
                          {"gradients", m.bytes_per_param.gradients},
                          {"optimizer", m.bytes_per_param.optimizer},
                          {"total", m.bytes_per_param.total()}};
  j["total_params"] = m.total_params;
  if (w.offloaded_bytes > 0 || w.host_bytes > 0 || w.nvme_bytes > 0) {
    j["offload"] = {{"offloaded_bytes", w.offloaded_bytes},
                    {"host_bytes_per_gpu", w.host_bytes},
                    {"nvme_bytes_per_gpu", w.nvme_bytes},
                    {"host_bytes_per_node", m.host_bytes_per_node},
                    {"host_capacity_bytes", m.host_capacity_bytes},
                    {"host_fits", m.host_fits}};
  }
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : m.stages)
    stages.push_back(stage_json(s, m.activations_known, m.fragmentation));
  j["stages"] = stages;
  j["notes"] = nlohmann::json::array();
  if (!m.activations_known) {
    j["notes"].push_back(
        "activations unknown: only the parameter count was given; pass --model or "
        "--layers/--hidden/--heads for activation memory");
  }
  return j;
}

}  // namespace shardplan
