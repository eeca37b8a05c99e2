// Launcher configs from a plan: DeepSpeed JSON, a Megatron-LM pretrain_gpt.py script, a
// torchtitan (v0.2.2) TOML and an accelerate FSDP YAML, each with the plan's degrees and batch
// sizes, the long-run settings of the runbook, the launch command, and where every number came
// from. Emitters are pure: inputs in, a document object out; text is written at the edge.
#pragma once

#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/plan.hpp"
#include "shardplan/rule_words.hpp"
#include "shardplan/runbook.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan {

enum class LauncherFormat { deepspeed, megatron, torchtitan, accelerate };
const char* to_string(LauncherFormat f);
LauncherFormat parse_launcher_format(const std::string& text, const std::string& field);
/// The format a framework is launched with by default (fsdp: accelerate).
LauncherFormat default_format(Framework framework);
/// The framework a launcher format runs (accelerate: fsdp).
Framework framework_of(LauncherFormat format);

/// Long runs checkpoint on wall-clock time, not on epochs; 30 minutes is the default interval when the
/// user names none (--checkpoint-interval auto takes the runbook's Young interval instead).
inline constexpr double kDefaultCheckpointIntervalS = 1800;
/// Megatron-LM's --seed default (RNGConfig.seed = 1234), used by every format unless --seed.
inline constexpr int kDefaultSeed = 1234;

enum class IntervalChoice { default_interval, young, given };

/// The long-run settings every format carries, each with where it came from.
struct LongRunSettings {
  int checkpoint_interval_steps = 0;
  double checkpoint_interval_s = 0;  // the target; the config holds it rounded to whole steps
  std::string interval_source;
  int keep_last = 0;
  int timeout_minutes = 0;
  int seed = kDefaultSeed;
  std::string seed_source;
};

/// Settings from the runbook: its interval (Young's, the default, or the given one, as the
/// runbook was asked), its keep-last-K and collective timeout, and the random seed.
LongRunSettings long_run_settings(const Runbook& runbook, IntervalChoice choice, int seed,
                                  bool seed_given);

/// Everything an emitter reads.
struct EmitInputs {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  Estimate estimate;
  Runbook runbook;
  LongRunSettings settings;
  std::string plan_source;  // "flags" or the plan file and pick
  std::string output_path;  // where the document is written (-o); empty: the format's usual name
};

/// A value in the output and where it came from.
struct Provenance {
  std::string setting;
  std::string value;
  std::string source;
};

/// What comes with every document: provenance of its numbers, what the training script must do
/// where the launcher has no key, and the launch command.
struct EmitMeta {
  std::vector<Provenance> provenance;
  std::vector<std::string> notes;
  std::vector<std::string> launch;
  std::vector<std::string> header;  // all of the above as comment lines, headed by a summary
};

struct DeepSpeedConfig {
  nlohmann::json config;  // provenance goes in its top-level "_shardplan" object
  EmitMeta meta;
};

/// One pretrain_gpt.py argument; `shell` values are written unquoted-in-double-quotes so the
/// script expands them ("$CHECKPOINT_DIR").
struct MegatronArg {
  std::string flag;
  std::string value;  // empty for store_true flags
  bool shell = false;
};
struct MegatronScript {
  std::vector<std::pair<std::string, std::string>> variables;  // NAME, shell default expression
  std::vector<std::pair<std::string, std::string>> exports;    // environment for every rank
  std::vector<MegatronArg> args;
  EmitMeta meta;
};

struct TorchtitanConfig {
  toml::table config;
  EmitMeta meta;
};

struct AccelerateConfig {
  YAML::Node config;
  EmitMeta meta;
};

/// What the launcher cannot express for this plan, naming the flag to change; empty when it can.
std::vector<PlanProblem> deepspeed_problems(const EmitInputs& in);
std::vector<PlanProblem> megatron_problems(const EmitInputs& in);
std::vector<PlanProblem> torchtitan_problems(const EmitInputs& in);
std::vector<PlanProblem> accelerate_problems(const EmitInputs& in);
std::vector<PlanProblem> launcher_problems(LauncherFormat f, const EmitInputs& in);

// The documents. Each requires its *_problems to be empty.
DeepSpeedConfig emit_deepspeed(const EmitInputs& in);
MegatronScript emit_megatron(const EmitInputs& in);
TorchtitanConfig emit_torchtitan(const EmitInputs& in);
AccelerateConfig emit_accelerate(const EmitInputs& in);

// Their text: JSON, a bash script, TOML and YAML, the last three headed by # comments.
std::string write_deepspeed(const DeepSpeedConfig& c);
std::string write_megatron(const MegatronScript& s);
std::string write_torchtitan(const TorchtitanConfig& c);
std::string write_accelerate(const AccelerateConfig& c);

/// The text of one format; requires launcher_problems(f, in) to be empty.
std::string emit_text(LauncherFormat f, const EmitInputs& in);

/// Gradient accumulation steps: global batch / (micro-batch x data-parallel degree).
int accumulation_steps(const EmitInputs& in);

}  // namespace shardplan
