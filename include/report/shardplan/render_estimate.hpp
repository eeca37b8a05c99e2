// Step time, throughput and time to train as `shardplan estimate` prints them, and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/framework.hpp"
#include "shardplan/interval.hpp"
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

/// The words of the engine's MFU check (the framework x GPU generation's highest published MFU,
/// or the red flag at scale), else empty: what every command prints under a plan.
std::string mfu_warning(const MfuPlausibility& check);

/// "Training 15.00T tokens: 41.2 days (...)" for a run of --tokens, or why none is given (the
/// plan does not fit); empty without --tokens. estimate and plan print it alike.
std::string training_run_text(const Estimate& estimate, const TrainingSpec& training);

}  // namespace shardplan
