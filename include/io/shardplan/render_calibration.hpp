// `shardplan validate --cross-validate` as it prints: the fitted constants, leave-one-source-
// group-out errors per group and per class, the intervals and their coverage.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/calibration.hpp"

namespace shardplan {

std::string render_cross_validation(const CrossValidation& cv);
nlohmann::json to_json(const CrossValidation& cv);
/// The README's accuracy paragraph, generated from the same figures (Markdown).
std::string accuracy_paragraph(const CrossValidation& cv);

}  // namespace shardplan
