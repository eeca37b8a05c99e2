// The charts of the --html reports, as Vega-Lite specs built from engine results. They format;
// they compute nothing the engine should own (a probe's fitted curve is its fit's own formula).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/html_report.hpp"
#include "shardplan/ladder.hpp"
#include "shardplan/memory.hpp"
#include "shardplan/provision.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// Memory per device, stacked by part, one bar per pipeline stage, against the capacity; what
/// offload keeps in host memory stands on top, hollow.
Chart memory_chart(const MemoryBreakdown& memory, const std::string& plan_name);

/// Each plan's step: compute, recompute, bubble, exposed communication per parallelism, offload,
/// optimizer; only the parts some plan has, each in the same colour on every page.
Chart step_chart(const std::vector<std::pair<std::string, Estimate>>& plans);

/// One plan's collectives (and offload's PCIe transfers) per step: hidden behind compute and
/// exposed, with calls x size and the link each crosses.
Chart comm_chart(const Estimate& estimate, const ClusterSpec& cluster);

/// The whole training run (`--tokens`) split as one step is: days, and dollars when it is priced.
Chart training_chart(const Estimate& estimate);

/// Each rung's memory per device (log scale) and exposed-communication share against the two
/// limits, every rung's figure written at its bar's end.
Chart ladder_chart(const LadderResult& ladder);

/// Searched plans: step time vs memory per device, coloured by layout (DP, TP, PP, CP), shaped by
/// ZeRO stage, with the recommended and fastest plans marked and labelled where no point is.
Chart search_chart(const std::vector<Candidate>& plans, const ParallelPlan* recommended,
                   const ParallelPlan* fastest, double capacity_bytes);

/// Time to train vs cost of every option that fits, the Pareto frontier drawn, the deadline and
/// the best option marked; each GPU type in its own colour and shape on every page, each label
/// placed off the points, the frontier and the deadline.
Chart provision_chart(const ProvisionResult& result, const ProvisionRequest& request);

/// A probe profile: bus bandwidth vs message size, one panel per tier, per collective (measured
/// points, filled where the bandwidth was fitted; the fitted curve, its figures in the legend;
/// the link's nominal figure). InputError naming `origin` when it has no rows.
Chart busbw_chart(const nlohmann::json& profile, const std::string& origin);
/// A probe profile: GEMM TFLOP/s vs size (FLOPs per GEMM) per dtype, one point per shape,
/// against the dense peak and, where the probe fitted one, the planner's efficiency curve.
Chart gemm_chart(const nlohmann::json& profile, const std::string& origin);
/// A probe profile: host-memory bandwidth, STREAM Copy / Triad per node and pinned host-GPU
/// copies per GPU. InputError naming `origin` when it has no host rows.
Chart host_chart(const nlohmann::json& profile, const std::string& origin);

}  // namespace shardplan
