// The subcommand table: each subcommand lives in its own file (cmd_<name>.cpp) and registers its
// flags here.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace shardplan::cli {

/// Runs the subcommand after parsing; returns the exit status (0 ok, 1 does not fit / no plan).
using Runner = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  Runner (*setup)(CLI::App& sub);
};

Runner setup_list(CLI::App& sub);
Runner setup_memory(CLI::App& sub);
Runner setup_comm(CLI::App& sub);
Runner setup_estimate(CLI::App& sub);
Runner setup_plan(CLI::App& sub);
Runner setup_validate(CLI::App& sub);
Runner setup_calibrate(CLI::App& sub);
Runner setup_runbook(CLI::App& sub);
Runner setup_emit(CLI::App& sub);
Runner setup_probe(CLI::App& sub);
Runner setup_provision(CLI::App& sub);
Runner setup_report(CLI::App& sub);

}  // namespace shardplan::cli
