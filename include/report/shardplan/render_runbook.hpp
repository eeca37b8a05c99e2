// The runbook as people and programs read it: the checkpoint/failure/goodput table, the
// procedures of a long run with this plan's numbers in them, and the --json object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/runbook.hpp"

namespace shardplan {

/// The runbook's inputs and which of them the user gave; the others are printed as defaults
/// with their sources.
struct RunbookInputs {
  RunbookOptions options;
  bool storage_given = false;
  bool failure_rate_given = false;
  bool keep_last_given = false;
};

/// One procedure of the runbook: a topic ("collective timeout") and what to do, with numbers.
struct RunbookItem {
  std::string topic;
  std::string text;
};
std::vector<RunbookItem> runbook_items(const Runbook& r, const TrainingSpec& training);

/// "assumption: source" lines for every default the runbook rests on.
std::vector<std::string> runbook_assumptions(const Runbook& r, const RunbookInputs& in);
/// Problems the user should act on (keep-last-K does not fit the disk, ...).
std::vector<std::string> runbook_warnings(const Runbook& r);

/// The tables and procedures `shardplan runbook` prints.
std::string render_runbook(const Runbook& r, const RunbookInputs& in, const TrainingSpec& training,
                           const ClusterSpec& cluster);

/// checkpoint {bytes_per_rank, total_bytes, write_s, interval_s, keep_last, disk_bytes, ...},
/// failures {per_day, mtbf_s, ...}, goodput, operations, procedures, assumptions, warnings.
nlohmann::json to_json(const Runbook& r, const RunbookInputs& in, const TrainingSpec& training);

}  // namespace shardplan
