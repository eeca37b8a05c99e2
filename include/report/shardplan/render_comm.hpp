// Communication per step as `shardplan comm` prints it, and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

/// The communication table of `shardplan comm`.
std::string render_comm(const CommBreakdown& comm, const StepTime& step, const ParallelPlan& plan,
                        const TrainingSpec& training, const ClusterSpec& cluster);

nlohmann::json to_json(const CommBreakdown& comm, const StepTime& step, const ParallelPlan& plan,
                       const TrainingSpec& training, const ClusterSpec& cluster);

}  // namespace shardplan
