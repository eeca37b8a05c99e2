// The document each launcher builds before it becomes text, and the per-launcher emitters.
// Internal to the launch library: it carries toml++ and yaml-cpp, which no includer of the public
// emit.hpp should need. Emitters are pure: inputs in, a document object out; text is written at
// the edge (emit_text).
#pragma once

#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/emit.hpp"

namespace shardplan {

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
  std::vector<std::string> words;  // an argparse nargs='*' flag's values, one word each
};
struct MegatronScript {
  std::vector<std::pair<std::string, std::string>> variables;  // NAME, shell default expression
  std::vector<std::pair<std::string, std::string>> exports;    // environment for every rank
  std::vector<std::string> checks;  // bash lines that stop the script before torchrun
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

}  // namespace shardplan
