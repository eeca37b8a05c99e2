// Error kinds: bad user input (exit 2, message names the field) and internal checks (abort).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace shardplan {

/// Bad input from the user: a flag, a profile field, a config key. `field` names what to fix
/// (for example "--tp" or "profiles/gpus/h100.json: memory_gib"); the message says the value
/// and what would be valid. main() turns it into exit status 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string field, const std::string& message)
      : std::runtime_error(field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }
  /// What is wrong, without the field (to name the field again in other terms).
  std::string message() const { return std::string(what()).substr(field_.size() + 2); }

 private:
  std::string field_;
};

/// Internal invariant violated: a bug, not bad input. Prints file:line and aborts.
[[noreturn]] void check_failed(const char* expr, const char* file, int line, std::string_view why);

}  // namespace shardplan

#define SHARDPLAN_CHECK(cond, why)                                            \
  do {                                                                        \
    if (!(cond)) ::shardplan::check_failed(#cond, __FILE__, __LINE__, (why)); \
  } while (false)
