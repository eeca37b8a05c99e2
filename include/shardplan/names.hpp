// "Did you mean" for everything users name: presets, profile keys, subcommands.
#pragma once

#include <string>
#include <vector>

namespace shardplan {

/// Levenshtein distance between two names.
size_t edit_distance(const std::string& a, const std::string& b);

/// Up to `count` candidates closest to `wanted`, nearest first (case-insensitive; a candidate
/// that contains what was typed counts as near).
std::vector<std::string> nearest_names(const std::string& wanted,
                                       const std::vector<std::string>& candidates,
                                       size_t count = 3);

}  // namespace shardplan
