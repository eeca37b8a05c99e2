// Which launcher a config file is for, and the reader that reads it (launcher_config_reader.hpp).
#include "shardplan/launcher_config_reader.hpp"

#include <fmt/format.h>

#include "launcher_config_parts.hpp"
#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && lowered(s.substr(s.size() - tail.size())) == tail;
}

// The extension first; without a known one, the first thing the contents hold.
ConfigFormat format_of(const std::string& text, const std::string& path) {
  for (const char* e : {".sh", ".bash", ".args", ".txt"})
    if (ends_with(path, e)) return ConfigFormat::megatron;
  if (ends_with(path, ".json")) return ConfigFormat::deepspeed;
  if (ends_with(path, ".toml")) return ConfigFormat::torchtitan;
  if (ends_with(path, ".yaml") || ends_with(path, ".yml")) return ConfigFormat::accelerate;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return ConfigFormat::deepspeed;
  if (text.find("--tensor-model-parallel-size") != std::string::npos ||
      text.find("pretrain_gpt") != std::string::npos || text.find("#!") == 0)
    return ConfigFormat::megatron;
  if (text.find("[parallelism]") != std::string::npos || text.find("[job]") != std::string::npos)
    return ConfigFormat::torchtitan;
  if (text.find("distributed_type:") != std::string::npos) return ConfigFormat::accelerate;
  throw InputError("--from", fmt::format("'{}' is not a launcher config shardplan recognises; name "
                                         "it .sh (Megatron-LM script or argument list), .json "
                                         "(DeepSpeed), .toml (torchtitan) or .yaml (accelerate)",
                                         path));
}

}  // namespace

LauncherConfig read_launcher_config(const std::string& text, const std::string& path,
                                    const ConfigInputs& inputs) {
  switch (format_of(text, path)) {
    case ConfigFormat::megatron:
      return config::read_megatron(text, path, inputs);
    case ConfigFormat::deepspeed:
      return config::read_deepspeed(text, path);
    case ConfigFormat::torchtitan:
      return config::read_torchtitan(text, path);
    case ConfigFormat::accelerate:
      return config::read_accelerate(text, path);
  }
  return config::read_megatron(text, path, inputs);
}

}  // namespace shardplan
