// The inputs as JSON: every key carries its unit; key names are the stable contract of --json.
#pragma once

#include <nlohmann/json.hpp>

#include "shardplan/specs.hpp"

namespace shardplan {

nlohmann::json to_json(const ModelSpec& m);
nlohmann::json to_json(const ClusterSpec& c);
nlohmann::json to_json(const TrainingSpec& t);
nlohmann::json to_json(const ParallelPlan& p);

}  // namespace shardplan
