// What the four launcher-config readers share: recording settings, defaults and unknown keys.
#pragma once

#include <string>
#include <vector>

#include "shardplan/launcher_config.hpp"

namespace shardplan::config {

/// Collects what one file says, with the file's path for every message.
class Builder {
 public:
  Builder(LauncherFormat format, const std::string& path, const char* framework);

  /// The file sets `flag` to `value` through `key`.
  void set(const std::string& flag, const std::string& value, const std::string& key);
  /// The file is silent and the launcher's default stands for `flag`; `why` says so in a note.
  void launcher_default(const std::string& flag, const std::string& value, const std::string& why);
  /// A note on a field the file leaves to a default that needs no flag.
  void note_default(const std::string& why);
  /// A key the reader does not know: listed, or an InputError when it is within two edits of one
  /// of `plan_keys` (a misspelt plan key would otherwise leave the plan to its default unseen).
  void unknown(const std::string& key, const std::vector<std::string>& plan_keys);
  /// A note on what the file leaves undecided or what is not priced.
  void note(const std::string& what) { c_.notes.push_back(what); }
  /// Drops the setting of `flag` (a launcher overrides what the file asked for).
  void drop(const std::string& flag);
  /// The value of a setting already made, or empty.
  std::string value_of(const std::string& flag) const;

  /// InputError naming "path: key".
  [[noreturn]] void refuse(const std::string& key, const std::string& message) const;

  LauncherConfig& config() { return c_; }
  LauncherConfig take() { return std::move(c_); }

 private:
  LauncherConfig c_;
};

/// A file that the config at `config_path` names (a DeepSpeed JSON): `file` as written when it is
/// a readable file here, else the same path beside the config; empty when neither is.
std::string linked_file(const std::string& file, const std::string& config_path);

/// A whole number of the file, for `key`; InputError when it is not one (or below `min`).
long long integer(const Builder& b, const std::string& key, const std::string& text,
                  long long min = 0);

LauncherConfig read_megatron(const std::string& text, const std::string& path,
                             const ConfigInputs& inputs);
LauncherConfig read_deepspeed(const std::string& text, const std::string& path);
LauncherConfig read_torchtitan(const std::string& text, const std::string& path);
LauncherConfig read_accelerate(const std::string& text, const std::string& path);

}  // namespace shardplan::config
