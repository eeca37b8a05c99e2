// The decision ladder as text and JSON: each rung walked, its verdict, the plan it tried and
// why it passes or fails, in words.
#include "shardplan/render_ladder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "shardplan/json_out.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/table.hpp"

namespace shardplan {
namespace {

// Why a rung has no plan at all, most basic reason first.
std::string no_plan_reason(Rung rung, const ClusterSpec& c, std::optional<RuleId> top_rule) {
  if (rung == Rung::tensor_parallel && c.domain_gpus() < 2) {
    return fmt::format("tensor parallel needs 2 or more GPUs in a node; this cluster has {}",
                       c.domain_gpus());
  }
  if (rung == Rung::pipeline_parallel && c.gpus < 2) {
    return fmt::format("pipeline parallel needs 2 or more GPUs; this cluster has {}", c.gpus);
  }
  if (top_rule == RuleId::offload_supported && !c.host.known()) {
    return "the cluster states no host memory or host bandwidth to offload to (rule "
           "offload_supported; give a cluster profile with host facts)";
  }
  if (top_rule == RuleId::offload_supported) {
    return "the framework offloads none of what this rung needs (rule offload_supported; the "
           "offload capabilities in its profile, profiles/frameworks/)";
  }
  if (top_rule && *top_rule >= RuleId::framework_zero_stage) {
    return fmt::format("{} (rule {}; the framework's profile in profiles/frameworks/)",
                       rule_gist(*top_rule), to_string(*top_rule));
  }
  if (top_rule) {
    return fmt::format("no plan of this shape can run here; most break: {} (rule {})",
                       rule_gist(*top_rule), to_string(*top_rule));
  }
  return "no plan of this shape can run here: no degree divides the GPUs, the heads or layers, "
         "and the global batch together";
}

// "micro-batch 1, full recompute": the knobs the rung chose for the plan it shows.
std::string tried(const RungVerdict& v) {
  if (!v.has_plan) return "-";
  const ParallelPlan& p = v.plan.plan;
  return fmt::format("micro-batch {}, {} recompute", p.micro_batch,
                     p.recompute == Recompute::none ? "no" : to_string(p.recompute));
}

// The rule that refused the most rungs' plans (ties: the earliest rung's).
std::optional<RuleId> top_rule_of(const LadderResult& l) {
  std::map<RuleId, int> count;
  std::optional<RuleId> best;
  for (const RungVerdict& v : l.rungs) {
    if (!v.top_rule) continue;
    const int n = ++count[*v.top_rule];
    if (!best || n > count[*best]) best = v.top_rule;
  }
  return best;
}

bool memory_blocks(Blocker b) {
  return b != Blocker::none && b != Blocker::communication;
}

}  // namespace

namespace {

std::string describe_offload(const Offload& o) {
  std::string parts = o.optimizer ? "optimizer states" : "";
  if (o.params) parts += std::string(parts.empty() ? "" : ", ") + "weights";
  if (o.activations) parts += std::string(parts.empty() ? "" : ", ") + "activation checkpoints";
  return parts + (o.to == OffloadTarget::nvme ? " on NVMe" : " in host memory");
}

}  // namespace

std::string rung_reason(const RungVerdict& v, const ClusterSpec& c, double max_comm_share) {
  const std::string card = fmt::format("{} {}", format_gib(c.gpu.memory_bytes), c.gpu.name);
  const std::string wire =
      v.crosses_nodes ? c.nic.name + (c.rack_scale() ? " between domains" : " between nodes")
                      : c.intra.name;
  auto gb = [](double b) { return format_gib(b); };
  if (v.rung == Rung::offload && v.blocker == Blocker::none) {
    return fmt::format(
        "fits with {} to spare, {}; offload adds {} to the {} step (without it the step would "
        "be {}, but that needs {}, {} card)",
        gb(v.capacity_bytes - v.memory_bytes), describe_offload(v.plan.plan.offload),
        format_seconds(v.offload_s), format_seconds(v.plan.step_s),
        format_seconds(v.without_offload_s), gb(v.without_offload_bytes), card);
  }
  switch (v.blocker) {
    case Blocker::host_memory:
      return fmt::format("offloaded state needs {} of host memory per node, {} there",
                         gb(v.need_bytes), gb(c.host.memory_bytes));
    case Blocker::none:
      if (v.rung == Rung::expert_parallel) {
        // What expert parallelism buys: expert weights split, larger per-expert GEMMs.
        const ParallelPlan& p = v.plan.plan;
        return fmt::format(
            "experts split {} ways: each rank holds 1/{} of them and runs {}x the tokens per "
            "expert GEMM; fits with {} to spare; exposed communication {} of the step over {}{}",
            p.ep, p.ep, p.ep, gb(v.capacity_bytes - v.memory_bytes), format_percent(v.comm_share),
            wire, p.moe_a2a_overlap ? ", all-to-alls overlapped" : "");
      }
      return fmt::format("fits with {} to spare; exposed communication {} of the step over {}",
                         gb(v.capacity_bytes - v.memory_bytes), format_percent(v.comm_share), wire);
    case Blocker::no_valid_plan:
      if (v.rung == Rung::gradient_accumulation) {
        if (v.batch_per_gpu != std::floor(v.batch_per_gpu)) {
          // 24 sequences on 16 GPUs: 1.5 each, which no micro-batch divides.
          return fmt::format(
              "the global batch does not split evenly over the {} GPUs ({:g} sequences each): "
              "nothing to accumulate (a --global-batch that is a multiple of {} would)",
              c.gpus, v.batch_per_gpu, c.gpus);
        }
        return "each GPU's share of the global batch is one micro-batch already: nothing to "
               "accumulate "
               "(a larger --global-batch would make room)";
      }
      if (v.rung == Rung::single_gpu) return "the global batch does not split evenly over the GPUs";
      return no_plan_reason(v.rung, c, v.top_rule);
    case Blocker::gathered_layer:
      return fmt::format("a layer's gathered weights need {}, {} card", gb(v.need_bytes), card);
    case Blocker::optimizer_state:
      return fmt::format("optimizer state needs {}, {} card", gb(v.need_bytes), card);
    case Blocker::weights:
      return fmt::format("weights need {}, {} card", gb(v.need_bytes), card);
    case Blocker::model_states:
      return fmt::format("weights, gradients and optimizer state need {}, {} card",
                         gb(v.need_bytes), card);
    case Blocker::activations:
      return fmt::format("activations need {} at best ({} in all), {} card", gb(v.need_bytes),
                         gb(v.memory_bytes), card);
    case Blocker::communication:
      return fmt::format("fits, but exposed communication is {} of the step over {} (limit {})",
                         format_percent(v.comm_share), wire, format_percent(max_comm_share));
  }
  return "";
}

nlohmann::json to_json(const LadderResult& l, const ClusterSpec& c) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < l.rungs.size(); ++i) {
    const RungVerdict& v = l.rungs[i];
    const std::string reason = rung_reason(v, c, l.max_comm_share);
    a.push_back({{"rung", to_string(v.rung)},
                 {"fits", v.fits},
                 {"comm_ok", v.comm_ok},
                 {"passes", v.passes()},
                 {"stop", static_cast<int>(i) == l.stop},
                 {"blocker", to_string(v.blocker)},
                 {"reason", reason},
                 {"need_bytes", memory_blocks(v.blocker) && v.blocker != Blocker::no_valid_plan
                                    ? nlohmann::json(v.need_bytes)
                                    : nlohmann::json()},
                 {"memory_bytes", v.memory_bytes},
                 {"capacity_bytes", v.capacity_bytes},
                 {"comm_share", v.comm_share},
                 {"step_s", v.has_plan ? nlohmann::json(v.plan.step_s) : nlohmann::json()},
                 {"plan", v.has_plan ? to_json(v.plan.plan) : nlohmann::json()},
                 {"evaluated", v.evaluated}});
    if (v.rung == Rung::offload && v.has_plan && v.fits) {
      a.back()["offload_s"] = v.offload_s;
      a.back()["without_offload_step_s"] = v.without_offload_s;
      a.back()["without_offload_bytes"] = v.without_offload_bytes;
    }
  }
  return a;
}

std::string render_ladder(const LadderResult& l, const ClusterSpec& c) {
  std::string out = fmt::format(
      "The ladder: stop at the first rung that fits in memory and whose exposed communication is "
      "at "
      "most {} of the step\n",
      format_percent(l.max_comm_share));
  if (l.moe_total_params > 0) {
    out += fmt::format(
        "A mixture of experts: expert parallelism is tried after ZeRO-1/2, before ZeRO-3, tensor "
        "and pipeline parallelism. ZeRO-3 would gather all {} parameters on every pass, {:.1f}x "
        "the {} a token uses, and tensor parallelism cuts each expert's GEMMs; EP moves the "
        "tokens instead and keeps each expert whole (Megatron-Core's MoE guide: prefer EP over "
        "TP for the expert layers)\n",
        format_count(l.moe_total_params), l.moe_total_params / l.moe_active_params,
        format_count(l.moe_active_params));
  }
  Table t({{"rung", Table::Align::left},
           {"verdict", Table::Align::left},
           {"memory/device"},
           {"comm share"},
           {"step"},
           {"tried", Table::Align::left},
           {"reason", Table::Align::left}});
  for (size_t i = 0; i < l.rungs.size(); ++i) {
    const RungVerdict& v = l.rungs[i];
    const std::string reason = rung_reason(v, c, l.max_comm_share);
    const bool stop = static_cast<int>(i) == l.stop;
    t.add_row({to_string(v.rung),
               stop         ? "STOP HERE"
               : v.passes() ? "passes, slower"
                            : "no",
               v.has_plan ? format_gib(v.memory_bytes) : "-",
               v.fits ? format_percent(v.comm_share) : "-",
               v.fits ? format_seconds(v.plan.step_s) : "-", tried(v), reason});
  }
  out += t.render();
  if (l.stop >= 0 && l.first_pass >= 0 && l.first_pass != l.stop) {
    const RungVerdict& first = l.rungs[static_cast<size_t>(l.first_pass)];
    const RungVerdict& stop = l.rungs[static_cast<size_t>(l.stop)];
    out += fmt::format(
        "Rung {} passes, but rung {} runs {:.1f}x faster ({} vs {}): the walk climbs to it "
        "(it climbs when a later rung is at least {:.1f}x faster).\n",
        to_string(first.rung), to_string(stop.rung), first.plan.step_s / stop.plan.step_s,
        format_seconds(stop.plan.step_s), format_seconds(first.plan.step_s), l.climb_speedup);
  }
  if (l.stop < 0) {
    const bool any_fits =
        std::any_of(l.rungs.begin(), l.rungs.end(), [](const RungVerdict& v) { return v.fits; });
    const bool any_plan = std::any_of(l.rungs.begin(), l.rungs.end(),
                                      [](const RungVerdict& v) { return v.has_plan; });
    if (any_fits) {
      out +=
          "No rung is comfortable: those that fit in memory wait on the interconnect "
          "for more than the limit.\n";
    } else if (any_plan) {
      out += fmt::format(
          "No rung fits in memory: even the smallest plan needs more than the {} of a {}.\n",
          format_gib(c.gpu.memory_bytes), c.gpu.name);
    } else {
      // Nothing was even sized: every plan broke a rule (most often a batch too small to
      // spread over this many GPUs), which memory has nothing to do with.
      out += fmt::format(
          "No rung has a plan that can run on {} GPUs: every plan breaks a rule before memory "
          "is counted (the reasons above){}.\n",
          c.gpus,
          top_rule_of(l) == RuleId::batch_split
              ? "; the global batch is too small to give every data-parallel rank a "
                "sequence: raise --global-batch or use fewer GPUs"
              : "");
    }
  }
  return out;
}

}  // namespace shardplan
