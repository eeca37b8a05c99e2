// The version and commit that built this binary, for --version and for every file it writes
// (JSON outputs, launcher configs, probe profiles), so a number can be traced to the code that
// made it. Generated at build time by cmake/version.cmake.
#pragma once

namespace shardplan {

/// "0.1.0 (git 043b82e1a2b3)", "-dirty" when the tree had changes, or "(commit unknown ...)".
const char* shardplan_version();

}  // namespace shardplan
