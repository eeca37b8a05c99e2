// Launcher configs from a plan: DeepSpeed JSON, a Megatron-LM pretrain_gpt.py script, a
// torchtitan (v0.2.2) TOML and an accelerate FSDP YAML, each with the plan's degrees and batch
// sizes, the long-run settings of the runbook, the launch command, and where every number came
// from. This is what the CLI sees; the document objects each launcher builds are internal
// (src/emit/documents.hpp), so the TOML and YAML libraries stay inside the emit library.
#pragma once

#include <string>
#include <vector>

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
  long long seed = kDefaultSeed;  // 0..2^32-1 (--seed)
  std::string seed_source;
};

/// Settings from the runbook: its interval (Young's, the default, or the given one, as the
/// runbook was asked), its keep-last-K and collective timeout, and the random seed.
LongRunSettings long_run_settings(const Runbook& runbook, IntervalChoice choice, long long seed,
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

/// What the launcher cannot express for this plan, naming the flag to change; empty when it can.
std::vector<PlanProblem> deepspeed_problems(const EmitInputs& in);
std::vector<PlanProblem> megatron_problems(const EmitInputs& in);
std::vector<PlanProblem> torchtitan_problems(const EmitInputs& in);
std::vector<PlanProblem> accelerate_problems(const EmitInputs& in);
std::vector<PlanProblem> launcher_problems(LauncherFormat f, const EmitInputs& in);

/// The text of one format; requires launcher_problems(f, in) to be empty.
std::string emit_text(LauncherFormat f, const EmitInputs& in);

/// Gradient accumulation steps: global batch / (micro-batch x data-parallel degree).
int accumulation_steps(const EmitInputs& in);

}  // namespace shardplan
