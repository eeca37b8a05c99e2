// CLI11's own parse errors (unknown flag, repeated flag, missing value) and empty values, said
// the way shardplan says every other bad input: the flag, what is wrong, the nearest valid one.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace shardplan::cli {

/// One message for a CLI11 parse error of `shardplan SUB ARGS...`: an unknown flag with the
/// nearest flag `sub` takes, a flag given twice, or CLI11's text with the help command.
/// `args` are the words after the subcommand name.
std::string explain_parse_error(const CLI::App& sub, const std::vector<std::string>& args,
                                const std::string& cli11_text);

/// Throws InputError naming the first option of `sub` given an empty value (--gpus ""): an
/// empty value would otherwise read as "not given" and fall back to the default.
void refuse_empty_values(const CLI::App& sub);

}  // namespace shardplan::cli
