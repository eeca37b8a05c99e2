// Reading a launcher config: which launcher a file is for (its extension, else its contents) and
// that launcher's reader (src/launch/NAME_read.cpp), both from its row in the launcher table
// (emit.hpp LauncherRow), into what launcher_config.hpp holds.
#pragma once

#include <string>

#include "shardplan/launcher_config.hpp"

namespace shardplan {

/// Reads `text` (the contents of `path`) as the launcher config its extension names: .sh/.bash/
/// .args/.txt a Megatron-LM script or argument list, .json DeepSpeed, .toml torchtitan, .yaml/.yml
/// accelerate (without a known extension, the contents decide). InputError names `path` and the
/// key for a value shardplan cannot read or a plan key that looks misspelt; keys it does not
/// know at all are listed in `unknown`.
LauncherConfig read_launcher_config(const std::string& text, const std::string& path,
                                    const ConfigInputs& inputs = {});

}  // namespace shardplan
