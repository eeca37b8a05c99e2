// `shardplan validate` as it prints: predicted vs measured per source group, the per-framework
// table (fitted and held-out cases apart), and peak memory where the source publishes it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/validation.hpp"

namespace shardplan {

/// One framework profile's cases, fitted and held out apart.
struct FrameworkErrors {
  std::vector<Prediction> fitted, held_out;
};

/// Every run predicted, grouped by source (in file order) and by the framework that priced it.
/// A sweep layout that ran, with its step predicted.
struct SweepStep {
  const MemoryVerdictCase* c = nullptr;
  Prediction p;
};

struct ValidationReport {
  std::map<std::string, std::vector<Prediction>> groups;
  std::map<std::string, FrameworkErrors> by_framework;
  std::vector<std::string> order;
  /// The published sweeps' layouts that ran or ran out of memory, with shardplan's peaks.
  std::vector<VerdictPrediction> verdicts;
  /// The step of each sweep layout that ran, predicted for its stated plan (never fitted on).
  std::vector<SweepStep> sweep_steps;
  /// Runs their source flags, predicted but in none of the figures above.
  std::vector<Prediction> flagged;
};

/// The framework profile that priced a run ("none (ideal stack)" when the run names none).
std::string profile_of(const PublishedRun& run);

std::string render_validation(const ValidationReport& report);
nlohmann::json to_json(const ValidationReport& report);

/// The runs whose source flags their figure (PublishedRun::source_flags), predicted by the
/// shipped constants and shown apart from every aggregate: "" / an empty array when none.
std::string flagged_text(const std::vector<Prediction>& flagged);
nlohmann::json flagged_json(const std::vector<Prediction>& flagged);

}  // namespace shardplan
