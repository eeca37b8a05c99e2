// shardplan's own model JSON (the format of profiles/models/*.json), read strictly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

ModelSpec model_from_json(const nlohmann::json& j, const std::string& where);

/// Key figures for `shardplan list models`.
std::vector<std::pair<std::string, std::string>> model_summary_figures(const ModelSpec& m);

/// Checks an architecture for values no model has (zero heads, heads not dividing hidden
/// without a head_dim, kv_heads not dividing heads...). `where` names the origin.
void check_architecture(const ModelSpec& m, const std::string& where);

}  // namespace shardplan
