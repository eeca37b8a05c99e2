// The verdict at the top of every --html page: fits, does not fit, no plan (or, for a probe,
// what was measured), with the figures that decide it. Words from engine results; nothing is
// computed here that the engine owns.
#pragma once

#include <nlohmann/json.hpp>

#include "shardplan/html_report.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/provision.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// `plan`: fits when the ladder recommends a rung or the search found a plan that fits; no plan
/// otherwise, with the closest plan's memory against the capacity, or the rule that refused most
/// configurations when none was modelled.
Verdict plan_verdict(const PlanningResult& planned, const ClusterSpec& cluster);

/// `estimate`: fits or does not fit, the worst device's memory against the capacity (and the
/// node's host memory with offload); a plan that does not fit says its times are hypothetical.
Verdict estimate_verdict(const Estimate& estimate);

/// `provision`: fits with the best option; no plan when no option fits, or when none meets the
/// deadline or budget (naming which, and the fastest option).
Verdict provision_verdict(const ProvisionResult& result, const ProvisionRequest& request);

/// A probe profile: measured, with the ranks, hosts and back-end, and whether the links measured
/// are a CPU's (the mpi back-end) rather than the GPU fabric.
Verdict probe_verdict(const nlohmann::json& profile);

}  // namespace shardplan
