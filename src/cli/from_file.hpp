// --from FILE: a launcher config (Megatron-LM script, DeepSpeed JSON, torchtitan TOML,
// accelerate YAML) as the planning flags it stands for.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "shardplan/launcher_config_reader.hpp"
#include "shardplan/search.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan::cli {

void add_from_option(CLI::App& app, PlanningOptions& o);

/// The user's flags with what the file says filled in, and where each filled flag came from.
struct FromFile {
  PlanningOptions options;  // `from` cleared
  LauncherConfig config;
  std::map<std::string, std::string> origin;  // "--tp" -> "train.sh: --tensor-model-parallel-size"
  std::vector<std::string> notes;             // what was read, what was left to defaults, unknowns
};

/// Reads o.from. A flag given beside the file for a value the file sets is bad input (nothing is
/// replaced silently); flags for what the file leaves out (the cluster, --model for DeepSpeed and
/// accelerate) complete it.
FromFile fill_from_file(const PlanningOptions& o);

/// resolve_inputs for --from FILE: the file's plan, model, cluster and training, the
/// launcher's defaults where the file is silent (global batch, stage layout from layers per
/// stage), the notes first. InputError names the file's key, not the flag it became.
Inputs resolve_from_file(const PlanningOptions& o);

/// `plan --from FILE`: the file's plan priced, and the search's fastest plan beside it.
struct FileVersusSearch {
  std::string path;
  Estimate file;
  std::optional<Candidate> faster;  // the search's fastest, when its step is over 1% shorter
  double speedup = 1;               // the file's step / the fastest step
};
FileVersusSearch file_versus_search(const std::string& path, const Inputs& file,
                                    const Candidate* fastest);
/// "From FILE: plan, step, memory" and "Faster: plan, step, speed-up" (or why nothing is).
std::string render(const FileVersusSearch& v, const Inputs& file);
nlohmann::json to_json(const FileVersusSearch& v, const Inputs& file);

}  // namespace shardplan::cli
