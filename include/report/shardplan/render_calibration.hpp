// `shardplan validate --cross-validate` as it prints: the fitted constants, leave-one-source-
// group-out errors per group and per class, the intervals and their coverage.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/calibration.hpp"

namespace shardplan {

/// `cv` cross-validates the simulated step, `closed` the closed forms alone over the same runs
/// (StepModel::closed_form): the closed form is printed beside each figure.
std::string render_cross_validation(const CrossValidation& cv, const CrossValidation& closed);
nlohmann::json to_json(const CrossValidation& cv, const CrossValidation& closed);
/// The README's accuracy paragraph, generated from the same figures (Markdown).
std::string accuracy_paragraph(const CrossValidation& cv, const CrossValidation& closed);
/// The validation doc's tables (Markdown): held-out errors and coverage, closed form against
/// simulated step, for every case, the pipeline-heavy (PP >= 8 or interleaved) and the MoE
/// ones, then per source group.
std::string group_table_markdown(const CrossValidation& cv, const CrossValidation& closed);

/// `validate --calibrate-with K`: error, signed error and coverage per framework x GPU
/// generation for K = 0 .. K calibration runs per bucket, on the same cases.
std::string render_few_shot(const std::vector<FewShot>& shots);
nlohmann::json few_shot_json(const std::vector<FewShot>& shots);

}  // namespace shardplan
