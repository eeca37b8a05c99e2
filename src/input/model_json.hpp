// shardplan's own model JSON (the format of profiles/models/*.json), read strictly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan {

class StrictObject;

ModelSpec model_from_json(const nlohmann::json& j, const std::string& where);

/// The architecture keys beyond a plain decoder (MoE layout, shared experts, MLA, QK-norm, extra
/// norms, MTP, sliding window): read when present, written only when they differ from a plain
/// decoder, so that presets, plan files and --json share one spelling.
void read_extended_architecture(StrictObject& o, ModelSpec& m);
void write_extended_architecture(const ModelSpec& m, nlohmann::json& j);

/// Key figures for `shardplan list models`.
std::vector<std::pair<std::string, std::string>> model_summary_figures(const ModelSpec& m);

/// Checks an architecture for values no model has (zero heads, heads not dividing hidden
/// without a head_dim, kv_heads not dividing heads...). `where` names the origin.
void check_architecture(const ModelSpec& m, const std::string& where);

}  // namespace shardplan
