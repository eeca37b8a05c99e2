// Megatron-LM's own start-up checks, transcribed as rules an emitted pretrain_gpt.py launch must
// pass: validate_args (megatron/training/arguments.py), TransformerConfig.__post_init__
// (megatron/core/transformer/transformer_config.py), the pipeline layout's validate_layer_layout,
// the microbatch calculator and OptimizerParamScheduler, all at NVIDIA/Megatron-LM commit
// d98e8a64ddf34856e74b24714e3bedb2f5a39553 (core 0.20); plus the rules that make the script train
// the model named (its config.json fields against Megatron's flag defaults).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "shardplan/specs.hpp"

namespace shardplan::test {

/// One launch as pretrain_gpt.py sees it: its arguments (flag -> value, "" for store_true), the
/// world size torchrun starts, and the environment it inherits.
struct MegatronLaunch {
  std::map<std::string, std::string> args;
  int world_size = 0;
  std::string cuda_device_max_connections;  // "" when unset
};

/// Runs an emitted script with a stand-in torchrun (bash, with the placeholders set) and returns
/// what pretrain_gpt.py would receive.
MegatronLaunch run_megatron_script(const std::string& script);

struct MegatronRule {
  const char* id;
  const char* source;  // file, function and the check's message or condition
  // An empty string when the launch passes, else what fails.
  std::function<std::string(const MegatronLaunch&, const ModelSpec&)> check;
};

const std::vector<MegatronRule>& megatron_rules();

/// "id: message" for every rule the launch fails.
std::vector<std::string> megatron_failures(const MegatronLaunch& launch, const ModelSpec& model);

}  // namespace shardplan::test
