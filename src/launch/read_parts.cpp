// The bookkeeping every launcher-config reader shares (read_parts.hpp): settings,
// launcher defaults, notes and unknown keys, with the file's path in every message.
#include "read_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {

namespace config {

Builder::Builder(LauncherFormat format, const std::string& path, const char* framework) {
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
  c_.settings.push_back(
      {flag, value, fmt::format("({} default)", launcher_title(c_.format)), true});
  c_.defaults.push_back(why);
}

void Builder::note_default(const std::string& why) {
  c_.defaults.push_back(why);
}

void Builder::unknown(const std::string& key, const std::vector<std::string>& plan_keys) {
  for (const std::string& k : plan_keys) {
    // Bounded: a long script has hundreds of arguments shardplan does not read, and only
    // "within 2 edits" matters.
    if (k != key && edit_distance(lowered(k), lowered(key), 2) <= 2) {
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
  const bool digits =
      !text.empty() && text.size() < 12 &&
      std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!digits || std::stoll(text) < min) {
    b.refuse(key, fmt::format("'{}' is not a whole number{}", text,
                              min > 0 ? fmt::format(" of at least {}", min) : ""));
  }
  return std::stoll(text);
}

std::string linked_file(const std::string& file, const std::string& config_path) {
  if (file.empty()) return "";
  const size_t slash = config_path.rfind('/');
  const std::string beside = slash == std::string::npos || file.front() == '/'
                                 ? file
                                 : config_path.substr(0, slash + 1) + file;
  for (const std::string& candidate : {file, beside}) {
    if (std::filesystem::is_regular_file(candidate)) return candidate;
  }
  return "";
}

}  // namespace config

}  // namespace shardplan
