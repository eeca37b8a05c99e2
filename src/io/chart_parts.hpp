// Pieces the report charts share: limit lines labelled outside the plot, where no bar or point
// can cover them, and colour scales whose hues stay apart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace shardplan::charts {

inline constexpr const char* kLimitColor = "#d62728";

/// A field on an axis: {"field", "type", "title"}.
nlohmann::json axis(const std::string& field, const std::string& type, const std::string& title);

/// A dashed limit line at `value` on `channel` ("x": vertical, "y": horizontal) and its label,
/// as two layers. The label sits above the plot, past the last bar or point: over the line for
/// "x", at the right end for "y".
std::vector<nlohmann::json> limit_rule(const std::string& channel, double value,
                                       const std::string& label);

/// Ten colours far apart, none the limit red: any two differ by CIE94 colour difference 21 or
/// more (the default Tableau 10 scheme's pinks and greys come within 14).
const std::vector<std::string>& categorical_palette();

/// A nominal colour scale over (name, colour) pairs, in that order, with only those present:
/// a part keeps its colour from page to page and the legend lists what the chart holds.
nlohmann::json part_colors(const std::vector<std::pair<std::string, std::string>>& parts,
                           const std::string& title);

}  // namespace shardplan::charts
