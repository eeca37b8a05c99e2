// The four kinds of --html report: which charts each command's page holds, and its summary lines.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/html_report.hpp"
#include "shardplan/planning.hpp"
#include "shardplan/provision.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// `plan --html`: the ladder, the searched plans, the recommended and fastest plans' memory and
/// step breakdowns.
/// `notes`: what was assumed for the user, shown in the summary as the text report says them.
HtmlReport plan_report(const PlanningResult& planned, const ModelSpec& model,
                       const TrainingSpec& training, const ClusterSpec& cluster,
                       const std::vector<std::string>& notes = {});

/// `estimate --html`: one plan's memory per stage and step breakdown.
HtmlReport estimate_report(const Estimate& estimate, const ModelSpec& model,
                           const TrainingSpec& training, const ParallelPlan& plan,
                           const ClusterSpec& cluster,
                           const std::vector<std::string>& notes = {});

/// `provision --html`: time to train vs cost with the Pareto frontier, and the best option's
/// memory and step breakdown.
HtmlReport provision_report(const ProvisionResult& result, const ProvisionRequest& request,
                            const ModelSpec& model);

/// `probe --html` and `report PROFILE.json --html`: bus bandwidth and GEMM throughput measured.
HtmlReport probe_report(const nlohmann::json& profile, const std::string& origin);

}  // namespace shardplan
