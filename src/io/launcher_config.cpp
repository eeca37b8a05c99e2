// Which launcher a config file is for, and the bookkeeping every reader shares.
#include "shardplan/launcher_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "launcher_config_parts.hpp"
#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {

const char* to_string(ConfigFormat f) {
  switch (f) {
    case ConfigFormat::megatron:
      return "Megatron-LM";
    case ConfigFormat::deepspeed:
      return "DeepSpeed";
    case ConfigFormat::torchtitan:
      return "torchtitan";
    case ConfigFormat::accelerate:
      return "accelerate";
  }
  return "Megatron-LM";
}

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

namespace config {

Builder::Builder(ConfigFormat format, const std::string& path, const char* framework) {
  c_.format = format;
  c_.path = path;
  c_.framework = framework;
}

void Builder::set(const std::string& flag, const std::string& value, const std::string& key) {
  auto same = [&](const ConfigSetting& s) { return s.flag == flag; };
  c_.settings.erase(std::remove_if(c_.settings.begin(), c_.settings.end(), same),
                    c_.settings.end());
  c_.settings.push_back({flag, value, key, false});
}

void Builder::launcher_default(const std::string& flag, const std::string& value,
                               const std::string& why) {
  c_.settings.push_back({flag, value, fmt::format("({} default)", to_string(c_.format)), true});
  c_.defaults.push_back(why);
}

void Builder::note_default(const std::string& why) {
  c_.defaults.push_back(why);
}

void Builder::unknown(const std::string& key, const std::vector<std::string>& plan_keys) {
  for (const std::string& k : plan_keys) {
    // Lengths apart by more than 2 are more than 2 edits apart: the distance is not needed (a
    // long script has hundreds of arguments shardplan does not read).
    const size_t apart = k.size() > key.size() ? k.size() - key.size() : key.size() - k.size();
    if (k != key && apart <= 2 && edit_distance(lowered(k), lowered(key)) <= 2) {
      refuse(key, fmt::format("is not a key shardplan knows; did you mean {}? (a misspelt plan "
                              "key would leave the plan to its default unseen)",
                              k));
    }
  }
  if (std::find(c_.unknown.begin(), c_.unknown.end(), key) == c_.unknown.end())
    c_.unknown.push_back(key);
}

void Builder::drop(const std::string& flag) {
  auto same = [&](const ConfigSetting& s) { return s.flag == flag; };
  c_.settings.erase(std::remove_if(c_.settings.begin(), c_.settings.end(), same),
                    c_.settings.end());
}

std::string Builder::value_of(const std::string& flag) const {
  for (const ConfigSetting& s : c_.settings)
    if (s.flag == flag) return s.value;
  return "";
}

void Builder::refuse(const std::string& key, const std::string& message) const {
  throw InputError(c_.path + ": " + key, message);
}

long long integer(const Builder& b, const std::string& key, const std::string& text,
                  long long min) {
  const bool digits = !text.empty() && text.size() < 12 &&
                      std::all_of(text.begin(), text.end(), [](unsigned char c) {
                        return std::isdigit(c) != 0;
                      });
  if (!digits || std::stoll(text) < min) {
    b.refuse(key, fmt::format("'{}' is not a whole number{}", text,
                              min > 0 ? fmt::format(" of at least {}", min) : ""));
  }
  return std::stoll(text);
}

}  // namespace config
}  // namespace shardplan
