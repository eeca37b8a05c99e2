// Launcher configs read back: a Megatron-LM launch script or argument list, a DeepSpeed JSON, a
// torchtitan TOML or an accelerate YAML, turned into the planning flags they stand for: what a
// file says (launcher_config_reader.hpp reads one; each launcher's row in emit.hpp names its
// reader beside its writer).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace shardplan {

/// The launchers shardplan writes and reads, one row each (emit.hpp LauncherRow).
enum class LauncherFormat { deepspeed, megatron, torchtitan, accelerate };
/// As --format spells it ("megatron").
const char* to_string(LauncherFormat f);
/// As the launcher's project names itself ("Megatron-LM").
const char* launcher_title(LauncherFormat f);

/// One value the file gives, in shardplan's terms: the flag it stands for ("--tp"), that flag's
/// text ("8") and the file's key it came from ("--tensor-model-parallel-size"). A
/// `launcher_default` is what the launcher does when the file is silent (Megatron-LM's fp32 main
/// gradients): a flag the user gives beside the file replaces it without complaint.
struct ConfigSetting {
  std::string flag;
  std::string value;
  std::string key;
  bool launcher_default = false;
};

/// Pipeline stages given in layers per virtual stage (Megatron-LM
/// --num-layers-per-virtual-pipeline-stage, torchtitan pipeline_parallel_layers_per_stage): the
/// virtual stages per device and the lighter ends follow once the model's layers are known.
struct StagesByLayers {
  int layers_per_stage = 0;  // 0: not given
  int first_less = 0;        // the first stage holds layers_per_stage - first_less
  int last_less = 0;
  std::string key;
};

struct LauncherConfig {
  LauncherFormat format = LauncherFormat::megatron;
  std::string path;
  std::string framework;  // the --framework the launcher runs: megatron | deepspeed | ...
  std::vector<ConfigSetting> settings;
  StagesByLayers stages;
  /// Megatron-LM --account-for-embedding/loss-in-pipeline-split: the embedding and the loss each
  /// count as one layer of the split, so the first and last stage hold one layer fewer.
  bool embedding_counts_as_layer = false, loss_counts_as_layer = false;
  /// When the file gives no global batch, the launcher's default is micro-batch x data-parallel
  /// size x this many micro-batches per rank (Megatron-LM, accelerate: 1; DeepSpeed: its
  /// gradient_accumulation_steps); 0: the file gives the global batch.
  int default_accumulation = 0;
  std::vector<std::string> defaults;  // one note per plan field the file leaves to a default
  std::vector<std::string> unknown;   // keys shardplan does not know, named (not used)
  /// What the reader could not decide or does not price, each with where in the file: a branch
  /// on a value the file does not fix, a key that changes nothing shardplan prices, a setting
  /// the launcher overrides (Megatron-LM turns --sequence-parallel off at tp 1).
  std::vector<std::string> notes;
  bool holds_model = false;   // the file describes the architecture (Megatron-LM)
  std::string missing_model;  // why the file's model has no preset ("" when it has one)
  /// The model a script shardplan wrote names in its header ("... for llama-3.1-8b on ...,
  /// written by shardplan"): what its arguments cannot hold (the tokenizer's vocabulary) is
  /// that model's.
  std::string written_for;
};

/// What a launch script may take from outside the file: bash's environment (the script's own
/// assignments replace it) and the user's `--set NAME=VALUE` (which replaces the script's own).
struct ConfigInputs {
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> fixed;
};

}  // namespace shardplan
