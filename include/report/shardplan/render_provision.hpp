// The provision table and JSON: formats a ProvisionResult, computes nothing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/provision.hpp"

namespace shardplan {

/// Money as people read it: "$412k", "$1.23M".
std::string format_usd(double usd);

/// One line naming an option: "256 x H200 (dp 32 x tp 8, ZeRO-1, ...): 12.3 days, $1.23M".
std::string describe_option(const ProvisionOption& o);

/// The options table, best by the objective first; Pareto-optimal rows marked.
std::string render_provision(const ProvisionResult& r, const ProvisionRequest& request);

nlohmann::json to_json(const ProvisionOption& o);
/// The "provision" object of `provision --json`: options[], best, fastest, cheapest.
nlohmann::json to_json(const ProvisionResult& r, const ProvisionRequest& request);

}  // namespace shardplan
