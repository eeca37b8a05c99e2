// Flags of the long-run settings, shared by `runbook` and `emit`: storage bandwidth, keep-last-K,
// disk, failure rate, restart cost and checkpoint interval.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "shardplan/render_runbook.hpp"

namespace shardplan::cli {

struct RunbookFlags {
  std::string storage_bw, keep_last, disk, failure_rate, restart_cost, checkpoint_interval;
  bool storage_aggregate = false;
};

void add_runbook_options(CLI::App& app, RunbookFlags& f, const std::string& interval_help);

/// The runbook's options from the flags. --checkpoint-interval takes a duration or "auto"
/// (Young's interval); without it the interval is `default_interval_s` (0 = Young's).
RunbookInputs resolve_runbook_flags(const RunbookFlags& f, double default_interval_s);

/// "2e-5", "2e-5/gpu-hour" or "4.8e-4/gpu-day" as failures per GPU-hour.
double parse_failure_rate(const std::string& text, const std::string& field);

}  // namespace shardplan::cli
