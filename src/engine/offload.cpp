// Offload rules, memory and time (offload.hpp).
#include "shardplan/offload.hpp"

#include <algorithm>

#include "shardplan/plan.hpp"

namespace shardplan {

const char* to_string(OffloadProblem p) {
  switch (p) {
    case OffloadProblem::none:
      return "none";
    case OffloadProblem::no_host_facts:
      return "no_host_facts";
    case OffloadProblem::optimizer_not_supported:
      return "optimizer_not_supported";
    case OffloadProblem::params_not_supported:
      return "params_not_supported";
    case OffloadProblem::activations_not_supported:
      return "activations_not_supported";
    case OffloadProblem::nvme_not_supported:
      return "nvme_not_supported";
    case OffloadProblem::activations_to_nvme:
      return "activations_to_nvme";
    case OffloadProblem::parts_together:
      return "parts_together";
    case OffloadProblem::optimizer_needs_zero:
      return "optimizer_needs_zero";
    case OffloadProblem::params_need_zero:
      return "params_need_zero";
    case OffloadProblem::activations_need_recompute:
      return "activations_need_recompute";
  }
  return "";
}

const char* to_string(ActivationLayersProblem p) {
  switch (p) {
    case ActivationLayersProblem::none:
      return "none";
    case ActivationLayersProblem::not_supported:
      return "not_supported";
    case ActivationLayersProblem::with_checkpoints:
      return "with_checkpoints";
    case ActivationLayersProblem::to_nvme:
      return "to_nvme";
    case ActivationLayersProblem::with_pp:
      return "with_pp";
    case ActivationLayersProblem::with_recompute:
      return "with_recompute";
    case ActivationLayersProblem::too_many:
      return "too_many";
  }
  return "";
}

ActivationLayersProblem activation_layers_problem(const ParallelPlan& p, int fewest_layers,
                                                  const OffloadCaps& caps) {
  using A = ActivationLayersProblem;
  const Offload& o = p.offload;
  if (o.activation_layers <= 0) return A::none;
  if (!caps.activation_layers) return A::not_supported;
  if (o.activations) return A::with_checkpoints;
  if (o.to == OffloadTarget::nvme) return A::to_nvme;
  if (p.pp > 1 && !caps.activation_layers_with_pp) return A::with_pp;
  if (p.recompute != Recompute::none && !caps.activation_layers_with_recompute)
    return A::with_recompute;
  // Megatron-Core: cpu_offloading_num_layers < num_layers (the last layer's backward comes
  // straight after its forward: nothing to hide its copies behind).
  if (o.activation_layers >= fewest_layers) return A::too_many;
  return A::none;
}

int fewest_stage_layers(const ModelSpec& m, const ParallelPlan& p) {
  if (!m.has_architecture() || p.pp < 1) return 0;
  int fewest = stage_layers(m.layers, p, 0);
  for (int s = 1; s < p.pp; ++s) fewest = std::min(fewest, stage_layers(m.layers, p, s));
  return fewest;
}

OffloadSupport offload_support(const FrameworkCaps& caps) {
  const OffloadCaps& o = caps.offload;
  auto has_nvme = [](const std::vector<OffloadTarget>& t) {
    return std::find(t.begin(), t.end(), OffloadTarget::nvme) != t.end();
  };
  OffloadSupport s;
  s.optimizer = !o.optimizer.empty();
  s.params = !o.params.empty();
  s.activations = !o.activations.empty();
  s.nvme = has_nvme(o.optimizer) || has_nvme(o.params);
  s.params_with_optimizer = o.params_with_optimizer;
  s.optimizer_min_zero = o.optimizer_min_zero;
  s.params_min_zero = o.params_min_zero;
  return s;
}

OffloadProblem offload_kind_problem(const Offload& o, const OffloadSupport& allowed) {
  if (o.optimizer && !allowed.optimizer) return OffloadProblem::optimizer_not_supported;
  if (o.params && !allowed.params) return OffloadProblem::params_not_supported;
  if (o.activations && !allowed.activations) return OffloadProblem::activations_not_supported;
  if (o.to == OffloadTarget::nvme && !allowed.nvme) return OffloadProblem::nvme_not_supported;
  if (o.to == OffloadTarget::nvme && o.activations) return OffloadProblem::activations_to_nvme;
  if (allowed.params_with_optimizer && o.params != o.optimizer)
    return OffloadProblem::parts_together;
  return OffloadProblem::none;
}

OffloadProblem offload_problem(const ParallelPlan& p, const ClusterSpec& c,
                               const OffloadSupport& allowed) {
  const Offload& o = p.offload;
  if (!o.any()) return OffloadProblem::none;
  if (!c.host.known()) return OffloadProblem::no_host_facts;
  if (const OffloadProblem kind = offload_kind_problem(o, allowed); kind != OffloadProblem::none)
    return kind;
  if (o.optimizer && p.zero < allowed.optimizer_min_zero)
    return OffloadProblem::optimizer_needs_zero;
  if (o.params && p.zero < allowed.params_min_zero) return OffloadProblem::params_need_zero;
  if (o.activations && p.recompute != Recompute::full)
    return OffloadProblem::activations_need_recompute;
  return OffloadProblem::none;
}

std::vector<Offload> offload_choices(OffloadTarget to) {
  std::vector<Offload> out;
  for (int parts = 0; parts < 4; ++parts) {
    Offload o;
    o.optimizer = true;
    o.params = parts == 1 || parts == 3;
    o.activations = parts >= 2;
    o.to = to;
    out.push_back(o);
  }
  return out;
}

int gpus_on_node(const ClusterSpec& c) {
  return std::max(1, std::min(c.gpus, c.gpus_per_node));
}

OffloadTime offload_time(const Offload& o, const HostSpec& h, const OffloadInputs& in) {
  OffloadTime t;
  if (!o.any() || !h.known()) return t;
  // Gradients go down, weights come up: each direction at its own (measured or datasheet) rate.
  const double down = h.d2h_bytes_per_s(), up = h.h2d_bytes_per_s();
  t.link_measured = h.link_measured();
  t.dram_measured = h.dram_measured();
  const double node_params = in.shard_params * in.gpus_on_node;
  const bool nvme = o.to == OffloadTarget::nvme && h.nvme_bytes_per_s > 0;
  double nvme_bytes = 0;
  if (o.optimizer) {
    t.gradients_down_s = in.shard_params * in.gradient_bytes_per_param / down;
    if (!o.params) t.weights_up_s = in.shard_params * in.weight_bytes_per_param / up;
    t.cpu_adam_s = node_params * kCpuAdamBytesPerParam / h.cpu_adam_dram_bytes_per_s();
    if (nvme) nvme_bytes += 2.0 * node_params * in.optimizer_bytes_per_param;  // read + write
  }
  if (o.params) {
    const double passes = 2.0 * in.micro_batches;  // forward and backward fetch every layer
    t.params_fetch_s = passes * in.shard_params * in.weight_bytes_per_param / up;
    if (nvme) nvme_bytes += passes * node_params * in.weight_bytes_per_param;
  }
  if (o.activations) {
    // Down after forward, up for backward.
    t.activations_s =
        in.micro_batches * in.activation_bytes_per_micro_batch * (1.0 / down + 1.0 / up);
  }
  if (o.activation_layers > 0) {
    // Each copy runs on its own stream beside one layer's pass (Megatron Bridge docs, CPU
    // Offloading: "overlaps computation with data transfers"); only its excess is exposed.
    const double n = static_cast<double>(in.micro_batches) * o.activation_layers;
    const double down_one = in.layer_activation_bytes / down;
    const double up_one = in.layer_activation_bytes / up;
    t.offloaded_layers = o.activation_layers;
    t.layers_down_s = n * down_one;
    t.layers_up_s = n * up_one;
    t.layers_exposed_s = n * (std::max(0.0, down_one - in.layer_forward_s) +
                              std::max(0.0, up_one - in.layer_backward_s));
  }
  if (nvme) t.nvme_s = nvme_bytes / h.nvme_bytes_per_s;
  const double overlappable = t.gradients_down_s + t.params_fetch_s + t.activations_s;
  t.hidden_s = std::min(overlappable, in.compute_s);
  t.exposed_s = overlappable - t.hidden_s + t.weights_up_s + t.cpu_adam_s + t.nvme_s +
                t.layers_exposed_s;
  return t;
}

}  // namespace shardplan
