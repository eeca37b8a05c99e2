// A launch script run the way bash would run it, as far as the file alone decides: the commands
// it would start, with their words after quoting and expansion.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace shardplan::config {

/// One simple command the script runs, its words expanded. `line` is where it starts in the
/// script; `via` says how it was reached when not at the top level ("bash -c at line 12",
/// "a heredoc at line 30", "function setup").
struct ShellCommand {
  std::vector<std::string> words;
  int line = 0;
  std::string via;
};

/// What running the script gives: its commands, the files its heredocs write (`cat <<EOF > F`),
/// its `#SBATCH` options, and a note for each thing it could not decide (a condition on a value
/// the file does not fix, a loop, a sourced file, a command substitution).
struct ShellRun {
  std::vector<ShellCommand> commands;
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> sbatch;  // "--nodes" -> "4" (short options by long name)
  std::vector<std::string> notes;
  std::vector<std::string> undecided;  // variables set only in branches not decided
};

/// Values the script does not fix: `environment` as bash's environment (the script's own
/// assignments replace them), `fixed` as the user's --set (they replace the script's own).
struct ShellInputs {
  std::map<std::string, std::string> environment;
  std::map<std::string, std::string> fixed;
};

/// Runs `script` symbolically: assignments (NAME=v, NAME+=v, arrays and +=( )), expansions
/// ($NAME, ${NAME:-d}, ${NAME:=d}, ${NAME:+a}, ${#NAME}, "${ARR[@]}", $((arithmetic))), if / elif
/// / else where the condition can be decided ([ ], [[ ]], test, (( ))), case on a known word,
/// functions, `bash -c STRING`, `eval` and heredocs. A value it cannot know stays as written
/// ("${TP}", "$(hostname)"), so a reader can name it.
ShellRun run_script(const std::string& script, const ShellInputs& inputs = {});

}  // namespace shardplan::config
