// Parses the long-run flags into RunbookOptions, recording which ones the user gave so the
// output can print the rest as defaults with their sources.
#include "runbook_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"
#include "shardplan/units.hpp"

namespace shardplan::cli {

void add_runbook_options(CLI::App& app, RunbookFlags& f, const std::string& interval_help) {
  app.add_option("--storage-bw", f.storage_bw,
                 "Checkpoint storage write bandwidth per node, e.g. 2GB/s (default 1GB/s)")
      ->group("Long run");
  app.add_flag("--storage-aggregate", f.storage_aggregate,
               "--storage-bw is the whole cluster's, not a node's")
      ->group("Long run");
  app.add_option("--keep-last", f.keep_last, "Checkpoints to keep (default 3)")->group("Long run");
  app.add_option("--disk", f.disk,
                 "Checkpoint disk capacity, e.g. 50TB: warn when keep-last does not fit")
      ->group("Long run");
  app.add_option(
         "--failure-rate", f.failure_rate,
         "Job interruptions per GPU-hour (2e-5 or 2e-5/gpu-hour) or per GPU-day (4.8e-4/gpu-day); "
         "default from Llama 3 405B")
      ->group("Long run");
  app.add_option("--restart-cost", f.restart_cost,
                 "Whole restart, e.g. 15min (default 10 min + checkpoint read)")
      ->group("Long run");
  app.add_option("--checkpoint-interval", f.checkpoint_interval, interval_help)->group("Long run");
}

double parse_failure_rate(const std::string& text, const std::string& field) {
  const auto slash = text.find('/');
  const double value = parse_count(text.substr(0, slash), field);
  std::string unit;
  if (slash != std::string::npos) {
    for (char c : text.substr(slash + 1)) {
      if (c != ' ' && c != '-' && c != '_')
        unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  double per_hour = 0;
  if (unit.empty() || unit == "gpuhour" || unit == "gpuh" || unit == "gpuhr") {
    per_hour = value;
  } else if (unit == "gpuday" || unit == "gpud") {
    per_hour = value / 24.0;
  } else {
    throw InputError(
        field, "'" + text + "' has an unknown unit; use e.g. 2e-5/gpu-hour or 4.8e-4/gpu-day");
  }
  if (per_hour > 1) throw InputError(field, "'" + text + "' is more than one failure per GPU-hour");
  return per_hour;
}

RunbookInputs resolve_runbook_flags(const RunbookFlags& f, double default_interval_s) {
  RunbookInputs in;
  RunbookOptions& o = in.options;
  in.storage_given = !f.storage_bw.empty();
  if (in.storage_given) o.storage_bytes_per_s = parse_bandwidth(f.storage_bw, "--storage-bw");
  if (f.storage_aggregate && !in.storage_given) {
    throw InputError("--storage-aggregate", "says how to read --storage-bw; give --storage-bw too");
  }
  o.storage_aggregate = f.storage_aggregate;
  in.keep_last_given = !f.keep_last.empty();
  if (in.keep_last_given) {
    const long long k = parse_positive_int(f.keep_last, "--keep-last");
    if (k > 1000)
      throw InputError("--keep-last", fmt::format("{} checkpoints is too many; at most 1000", k));
    o.keep_last = static_cast<int>(k);
  }
  if (!f.disk.empty()) o.disk_bytes = parse_bytes(f.disk, "--disk");
  in.failure_rate_given = !f.failure_rate.empty();
  if (in.failure_rate_given)
    o.failures_per_gpu_hour = parse_failure_rate(f.failure_rate, "--failure-rate");
  if (!f.restart_cost.empty()) o.restart_s = parse_duration(f.restart_cost, "--restart-cost");
  const std::string interval = lowered(f.checkpoint_interval);
  if (interval == "auto") {
    o.checkpoint_interval_s = 0;
  } else if (!interval.empty()) {
    o.checkpoint_interval_s = parse_duration(f.checkpoint_interval, "--checkpoint-interval");
  } else {
    o.checkpoint_interval_s = default_interval_s;
  }
  return in;
}

}  // namespace shardplan::cli
