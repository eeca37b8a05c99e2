// Strict JSON field access with errors that name the file, the key and what is valid.
#include "json_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {
namespace {

// nlohmann::json keeps the last of two equal keys and says nothing (RFC 8259 Sec. 4 leaves
// duplicate names to the implementation), so a profile or config.json that states a field twice
// would silently lose the first value. The parser's callback sees every key as it is read; this
// records the first repeated one with the keys of the objects around it.
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_.emplace_back();
      path_.emplace_back();
    } else if (event == Event::object_end && !open_.empty()) {
      open_.pop_back();
      path_.pop_back();
    } else if (event == Event::key && !open_.empty()) {
      const std::string key = parsed.get<std::string>();
      path_.back() = key;
      if (!open_.back().insert(key).second && duplicate_.empty()) {
        for (const std::string& k : path_) duplicate_ += (duplicate_.empty() ? "" : ".") + k;
      }
    }
    return true;
  }
  /// "sources.gb_per_s" for the first repeated key; empty when every key is unique.
  const std::string& first_duplicate() const { return duplicate_; }

 private:
  std::vector<std::set<std::string>> open_;  // keys seen in each object being read
  std::vector<std::string> path_;            // the key being read in each of those objects
  std::string duplicate_;
};

// The key in the other unit convention: profiles give datasheet units (_gb_per_s, _gib, _us),
// plan files and --json base units (_bytes_per_s, _bytes, _s); "" when the key has no unit.
std::string in_other_units(const std::string& key) {
  static constexpr std::pair<const char*, const char*> kUnits[] = {
      {"gb_per_s", "bytes_per_s"}, {"gib", "bytes"}, {"us", "s"}};
  for (const auto& [datasheet, base] : kUnits) {
    for (const auto& [from, to] : {std::pair{datasheet, base}, std::pair{base, datasheet}}) {
      const std::string suffix = std::string("_") + from;
      if (key == from) return to;
      if (key.size() > suffix.size() && key.ends_with(suffix))
        return key.substr(0, key.size() - suffix.size() + 1) + to;
    }
  }
  return "";
}

}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& origin) {
  try {
    DuplicateKeys keys;
    nlohmann::json j = nlohmann::json::parse(text, std::ref(keys));
    if (!keys.first_duplicate().empty()) {
      throw InputError(origin + ": " + keys.first_duplicate(),
                       "the key is given twice in one object; give it once (JSON readers keep "
                       "one of the two values, so the other would be silently lost)");
    }
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // Turn the byte offset into line:column, which editors understand.
    size_t line = 1, column = 1;
    for (size_t i = 0; i < std::min(e.byte > 0 ? e.byte - 1 : 0, text.size()); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError(origin, "malformed JSON at line " + std::to_string(line) + ", column " +
                                 std::to_string(column) + ": " + e.what());
  } catch (const nlohmann::json::out_of_range& e) {
    // Found by fuzzing: a number no double holds (1e+0794) is out_of_range, not parse_error.
    throw InputError(origin, std::string("a number is too large for a double: ") + e.what());
  }
}

StrictObject::StrictObject(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) throw InputError(where_, "expected a JSON object");
}

bool StrictObject::has(const std::string& key) const {
  return object_.contains(key) && !object_.at(key).is_null();
}

bool StrictObject::present(const std::string& key) {
  read_.insert(key);
  return has(key);
}

const nlohmann::json& StrictObject::get(const std::string& key) {
  read_.insert(key);
  if (!object_.contains(key)) {
    const std::string other = in_other_units(key);
    if (!other.empty() && object_.contains(other)) {
      throw InputError(field(key), "missing; '" + other +
                                       "' is given instead, in the other units: profiles take "
                                       "datasheet units (_gb_per_s, _gib, _us), plan files and "
                                       "--json base units (_bytes_per_s, _bytes, _s)");
    }
    throw InputError(field(key), "missing");
  }
  return object_.at(key);
}

double StrictObject::number(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_number()) throw InputError(field(key), "expected a number, got " + v.dump());
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw InputError(field(key), "must be finite");
  return d;
}

double StrictObject::positive(const std::string& key) {
  const double d = number(key);
  if (!(d > 0)) throw InputError(field(key), "must be greater than zero, got " + std::to_string(d));
  return d;
}

double StrictObject::number_or(const std::string& key, double fallback) {
  read_.insert(key);
  return has(key) ? number(key) : fallback;
}

int StrictObject::integer(const std::string& key) {
  const double d = number(key);
  if (d < 0 || d != std::floor(d) || d > 2e9) {
    throw InputError(field(key), "expected a whole number >= 0, got " + object_.at(key).dump());
  }
  return static_cast<int>(d);
}

int StrictObject::integer_or(const std::string& key, int fallback) {
  read_.insert(key);
  return has(key) ? integer(key) : fallback;
}

std::string StrictObject::string(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_string()) throw InputError(field(key), "expected a string, got " + v.dump());
  return v.get<std::string>();
}

std::string StrictObject::string_or(const std::string& key, const std::string& fallback) {
  read_.insert(key);
  return has(key) ? string(key) : fallback;
}

bool StrictObject::boolean(const std::string& key) {
  const auto& v = get(key);
  if (!v.is_boolean()) throw InputError(field(key), "expected true or false, got " + v.dump());
  return v.get<bool>();
}

bool StrictObject::boolean_or(const std::string& key, bool fallback) {
  read_.insert(key);
  return has(key) ? boolean(key) : fallback;
}

std::vector<std::string> StrictObject::keys() const {
  std::vector<std::string> out;
  for (const auto& item : object_.items()) out.push_back(item.key());
  return out;
}

std::vector<std::string> StrictObject::strings_or_empty(const std::string& key) {
  read_.insert(key);
  std::vector<std::string> out;
  if (!has(key)) return out;
  const auto& v = object_.at(key);
  if (!v.is_array()) throw InputError(field(key), "expected an array of strings");
  for (const auto& item : v) {
    if (!item.is_string()) throw InputError(field(key), "expected an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

const nlohmann::json& StrictObject::raw(const std::string& key) {
  return get(key);
}

StrictObject StrictObject::object(const std::string& key) {
  return StrictObject(get(key), field(key));
}

void StrictObject::finish() const {
  std::vector<std::string> known(read_.begin(), read_.end());
  for (const auto& [key, value] : object_.items()) {
    if (read_.count(key) != 0) continue;
    const auto near = nearest_names(key, known, 1);
    throw InputError(
        field(key),
        "unknown key" + (near.empty() ? std::string() : "; did you mean '" + near.front() + "'?"));
  }
}

}  // namespace shardplan
