// Strict reading of profile JSON: every key is either read or an error naming it and the
// nearest valid key, so a typo in a profile never silently falls back to a default.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "shardplan/names.hpp"

namespace shardplan {

/// Parses JSON text; InputError naming `origin` with the line and column on failure.
nlohmann::json parse_json(const std::string& text, const std::string& origin);

class StrictObject {
 public:
  /// `where` prefixes every error, e.g. "profiles/gpus/h100-sxm.json".
  StrictObject(const nlohmann::json& object, std::string where);

  bool has(const std::string& key) const;
  /// Whether `key` holds a value (neither absent nor null); either way it counts as read.
  bool present(const std::string& key);
  double number(const std::string& key);    // required, finite
  double positive(const std::string& key);  // required, > 0
  double number_or(const std::string& key, double fallback);
  int integer(const std::string& key);  // required, whole, >= 0
  int integer_or(const std::string& key, int fallback);
  std::string string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  bool boolean(const std::string& key);
  bool boolean_or(const std::string& key, bool fallback);
  std::vector<std::string> strings_or_empty(const std::string& key);
  const nlohmann::json& raw(const std::string& key);  // required, any type
  StrictObject object(const std::string& key);        // required, a JSON object

  /// Every key of the object, in order.
  std::vector<std::string> keys() const;

  /// Throws for the first key that was never read. Call after reading everything.
  void finish() const;
  const std::string& where() const { return where_; }
  std::string field(const std::string& key) const { return where_ + ": " + key; }

 private:
  const nlohmann::json& get(const std::string& key);
  const nlohmann::json& object_;
  std::string where_;
  std::set<std::string> read_;
};

}  // namespace shardplan
