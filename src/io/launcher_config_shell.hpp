// The words a launch script passes to its commands, after bash's quoting and expansion.
#pragma once

#include <string>
#include <vector>

namespace shardplan::config {

/// Every word of every command in `script` (assignments consumed, variables expanded), in order.
/// A value that cannot be known from the file ("$TP" set elsewhere) stays as written.
std::vector<std::string> shell_words(const std::string& script);

}  // namespace shardplan::config
