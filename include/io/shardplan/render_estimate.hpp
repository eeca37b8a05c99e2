// Step time, throughput and time to train as `shardplan estimate` prints them, and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/framework.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

nlohmann::json to_json(const StepTime& s);
nlohmann::json to_json(const Throughput& t);
/// The simulated step: step, bubble, compute and exposed seconds per communication stream.
nlohmann::json to_json(const SimulatedStep& s);
/// One paragraph under the step table: the simulated step and where its waits went.
std::string render_simulated(const SimulatedStep& s);
/// The object `shardplan estimate --json` prints: memory, time, throughput, comm.
nlohmann::json to_json(const Estimate& e, const ParallelPlan& plan, const TrainingSpec& training,
                       const ClusterSpec& cluster);

/// Step time, throughput and time to train.
std::string render_time(const Estimate& e, const TrainingSpec& training,
                        const ClusterSpec& cluster);

/// "4.1 s to 4.6 s (fsdp x H100, 2 held-out cases)": the step interval and where it comes from.
std::string interval_text(const StepInterval& interval, const TrainingSpec& training);
/// The validation class behind a step interval: framework x GPU generation, its case count and
/// whether they were held out ("accuracy" in every command's JSON).
nlohmann::json accuracy_json(const StepInterval& interval, const TrainingSpec& training,
                             const ClusterSpec& cluster);

/// A warning when `mfu` is above the highest MFU published for the training's framework (its
/// profile's max_published_mfu), else empty.
std::string mfu_warning(double mfu, const TrainingSpec& training);

}  // namespace shardplan
