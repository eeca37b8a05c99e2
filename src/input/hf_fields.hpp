// Typed reads of config.json fields, shared by the family readers: a wrong type or a value out
// of range is an InputError naming the file and the key, as a bad flag is.
#pragma once

#include <fmt/format.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "shardplan/error.hpp"

namespace shardplan {

// The first of `keys` the config gives, as a whole number of at least `least` (1 for a size:
// "max_position_embeddings": 0 is no context, not "unknown"); `fallback` when none is given.
inline int first_int(const nlohmann::json& j, std::initializer_list<const char*> keys, int fallback,
                     const std::string& origin, bool required, int least = 0) {
  for (const char* k : keys) {
    if (j.contains(k) && !j.at(k).is_null()) {
      const auto& v = j.at(k);
      if (!v.is_number_integer() || v.get<long long>() < 0) {
        throw InputError(origin + ": " + k, "expected a whole number, got " + v.dump());
      }
      if (v.get<long long>() > 2'000'000'000) {
        // Whole, but absurd: no model's size is in the billions in one dimension.
        throw InputError(origin + ": " + k,
                         fmt::format("{} is far beyond any model's (at most 2,000,000,000 here); "
                                     "check the config",
                                     v.dump()));
      }
      if (v.get<long long>() < least) {
        throw InputError(origin + ": " + k,
                         fmt::format("must be at least {}, got {}", least, v.dump()));
      }
      return v.get<int>();
    }
  }
  if (required) {
    std::string names;
    for (const char* k : keys) names += (names.empty() ? "" : " or ") + std::string(k);
    throw InputError(origin + ": " + names, "missing; this family's config.json must give it");
  }
  return fallback;
}

// A true/false field; anything but a JSON boolean is refused ("yes" read as false would silently
// untie the embeddings), as the --flags are.
inline bool flag(const nlohmann::json& j, const char* key, bool fallback,
                 const std::string& origin) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  const auto& v = j.at(key);
  if (!v.is_boolean())
    throw InputError(origin + ": " + key, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

}  // namespace shardplan
