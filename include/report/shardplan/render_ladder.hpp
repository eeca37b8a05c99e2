// The decision ladder `shardplan plan` walks, as text and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/ladder.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// Why a rung passes or fails, in words ("optimizer state needs 84.0 GB, 85.5 GB H100-SXM card").
std::string rung_reason(const RungVerdict& v, const ClusterSpec& cluster, double max_comm_share);
nlohmann::json to_json(const LadderResult& ladder, const ClusterSpec& cluster);
/// The ladder table: each rung walked, its verdict, memory, communication share and reason.
std::string render_ladder(const LadderResult& ladder, const ClusterSpec& cluster);

}  // namespace shardplan
