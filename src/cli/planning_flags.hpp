// The planning flags as one table: group, name, help and where each flag's text lands.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace shardplan::cli {

/// One planning flag. A command registers whole groups of the table (add_flag_group), so a flag
/// is declared once; `runbook` and `emit` plan the user's plan when any row that picks_plan is
/// given; `--from FILE` fills the rows by name.
struct PlanningFlag {
  const char* group;  // "Model", "Training", "Cluster", "Plan"
  const char* name;   // "--tp"
  const char* help;
  std::string PlanningOptions::*text = nullptr;  // an option: its text
  bool PlanningOptions::*on = nullptr;           // a switch
  bool picks_plan = false;  // describes the plan (not a rule for choosing one)
  // Help where `plan` / `provision` take the flag as a constraint of their search; null: those
  // commands do not take it (it would be ignored there).
  const char* search_help = nullptr;
};

/// Every row, in --help order.
const std::vector<PlanningFlag>& planning_flags();
/// The row named `name` ("--tp"); null when there is none.
const PlanningFlag* find_planning_flag(std::string_view name);
/// Whether the row was given: a non-empty text or a switch set.
bool flag_given(const PlanningOptions& o, const PlanningFlag& f);

/// Registers every row of `group` on `app`.
void add_flag_group(CLI::App& app, PlanningOptions& o, std::string_view group);
/// add_flag_group of one group: "Model", "Training", "Cluster" or "Plan".
void add_model_options(CLI::App& app, PlanningOptions& o);
void add_training_options(CLI::App& app, PlanningOptions& o);
void add_cluster_options(CLI::App& app, PlanningOptions& o);
void add_plan_options(CLI::App& app, PlanningOptions& o);
/// The Plan rows a search takes (--allow-tp-across-nodes, and --offload/--offload-to when
/// `with_offload`), with their search help.
void add_search_plan_options(CLI::App& app, PlanningOptions& o, bool with_offload);

/// The names of the given flags that describe a plan, in table order (empty: none given).
std::vector<std::string> plan_flags_in(const PlanningOptions& o);

}  // namespace shardplan::cli
