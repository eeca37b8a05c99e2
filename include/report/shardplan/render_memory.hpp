// The memory breakdown as `shardplan memory` prints it, and as JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/memory.hpp"
#include "shardplan/specs.hpp"

namespace shardplan {

/// The memory table alone (per device, per stage), for commands that print more.
std::string render_memory_table(const MemoryBreakdown& m, const ParallelPlan& plan);

/// The memory table `shardplan memory` prints, headed by the inputs.
std::string render_memory(const MemoryBreakdown& m, const ModelSpec& model,
                          const TrainingSpec& training, const ParallelPlan& plan,
                          const ClusterSpec& cluster);

/// What the worst device keeps free: "26.69 GiB to spare" (or "... over"), and with --headroom
/// ", 18.73 GiB beyond the 7.97 GiB headroom asked" (or "short of"). The memory verdict and
/// each plan `plan` recommends say it the same way.
std::string spare_text(const MemoryBreakdown& m);

nlohmann::json to_json(const MemoryBreakdown& m);

}  // namespace shardplan
