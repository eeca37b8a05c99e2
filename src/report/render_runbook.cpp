// Renders the runbook: its numbers with their derivations, the long-run procedures filled
// in for this plan, and the JSON contract of `shardplan runbook --json`.
#include "shardplan/render_runbook.hpp"

#include <fmt/format.h>

#include <cmath>

#include "shardplan/json_out.hpp"
#include "shardplan/table.hpp"

namespace shardplan {
namespace {

std::string per_param_text(const CheckpointPlan& k, const TrainingSpec& tr) {
  const char* dtype = tr.precision == Precision::fp32 ? "fp32" : "16-bit";
  return fmt::format(
      "{:g} B = {:g} ({} weights) + {:g} ({} optimizer state{}); gradients are not saved",
      k.bytes_per_param(), k.weight_bytes_per_param, dtype, k.optimizer_bytes_per_param,
      to_string(tr.optimizer), tr.recipe.has_master() ? " incl. the fp32 master copy" : "");
}

std::string minutes(double s) {
  return fmt::format("{:.0f} min", s / 60);
}

}  // namespace

std::vector<RunbookItem> runbook_items(const Runbook& r, const TrainingSpec& tr) {
  const CheckpointPlan& k = r.checkpoint;
  std::vector<RunbookItem> items;
  items.push_back(
      {"checkpoint on time",
       fmt::format(
           "save every {} steps ({} at {} per step), with the optimizer state: a weights-only "
           "checkpoint cannot resume Adam. A blocking save costs {}; asynchronous saving "
           "(Megatron-LM --async-save, torchtitan checkpoint.async_mode, PyTorch DCP async_save) "
           "leaves only the device-to-host copy on the critical path (PyTorch's 7B example: "
           "148.8 s -> 6.3 s).",
           k.interval_steps, format_seconds(k.effective_interval_s), format_seconds(r.step_s),
           format_seconds(k.write_s))});
  items.push_back(
      {"keep the last few",
       fmt::format(
           "keep the last {} checkpoints ({} of disk with the next one in flight): a loss spike "
           "is usually found after the checkpoint that contains it; {} x {} steps lets you roll "
           "back {} steps ({}).",
           k.keep_last, format_bytes(k.disk_bytes), k.keep_last, k.interval_steps, k.covered_steps,
           format_seconds(k.covered_steps * r.step_s))});
  items.push_back(
      {"store with each checkpoint",
       fmt::format("weights, optimizer state ({}), LR-scheduler state and step counter; the RNG "
                   "states (Python, NumPy, torch CPU and CUDA, the tensor-parallel RNG tracker); "
                   "the random seed, the data order and the loader's position (consumed samples "
                   "or the stateful loader's state) so a resumed run does not retrain on the same "
                   "examples; the exact config (the launcher file shardplan wrote, the code's "
                   "commit, the plan JSON). A run you cannot reproduce is a run you cannot debug.",
                   tr.recipe.has_master() ? "master weights and moments" : "moments")});
  items.push_back(
      {"test resume on day one",
       fmt::format("run {} steps, checkpoint at step {}, kill the job after it, restart from the "
                   "checkpoint and check: the step counter and LR continue, the loss continues "
                   "within noise, the next batch's sample ids equal an uninterrupted run's, and "
                   "time the restart (the restart cost R; planned {}). Make resuming the normal "
                   "path: every launch loads the latest checkpoint if there is one.",
                   2 * k.interval_steps, k.interval_steps, format_seconds(r.failures.restart_s))});
  items.push_back(
      {"log throughput per step",
       fmt::format("log step time, tokens/s (predicted {:.0f}), loss, gradient norm, learning "
                   "rate{} and the slowest rank's step time, every step. Flag a straggler when "
                   "the median tokens/s over the last {} steps ({}) falls {:.0f}% below the run's "
                   "median: above the 1-2% diurnal variation Llama 3 reports, below the ~10% slow "
                   "hosts MegaScale removed.",
                   r.tokens_per_s, tr.precision == Precision::fp16 ? ", loss scale" : "",
                   r.straggler_window_steps, format_seconds(r.straggler_window_steps * r.step_s),
                   r.straggler_drop * 100)});
  items.push_back(
      {"collective timeout",
       fmt::format(
           "{} ({:.0f} x the longest legitimate wait, {}: the step, a checkpoint write that the "
           "other ranks wait for, or a restart's read; never below 10 min). Defaults: PyTorch "
           "NCCL 10 min, Megatron-LM --distributed-timeout-minutes 10, DeepSpeed 30 min up to "
           "v0.19.5 (DEEPSPEED_TIMEOUT, minutes), torchtitan comm.train_timeout_seconds 100 after "
           "the first step. A collective that hangs is a job that is not crashed and not "
           "progressing.",
           minutes(r.collective_timeout_s), kTimeoutHeadroom, format_seconds(r.longest_wait_s))});
  items.push_back(
      {"loss spike",
       fmt::format(
           "when the loss jumps and does not recover: roll back to the last good checkpoint "
           "(PaLM: ~100 steps before the spike; up to {} steps are kept here), skip or reshuffle "
           "the batches around it (PaLM skipped 200-500 batches), and lower the learning rate for "
           "a while (OPT-175B lowered it and restarted from an earlier checkpoint). BLOOM's one "
           "spike recovered by itself in ~30 steps: wait a little before acting.",
           k.covered_steps)});
  return items;
}

std::vector<std::string> runbook_assumptions(const Runbook& r, const RunbookInputs& in) {
  std::vector<std::string> a;
  const CheckpointPlan& k = r.checkpoint;
  if (!in.storage_given) {
    a.push_back(fmt::format(
        "storage {} per node (default: BLOOM wrote 2.3 TB in ~40 s from 48 nodes = 1.2 GB/s per "
        "node; Llama 3's Tectonic sustains 2 TB/s for 2,048 nodes = 0.98; --storage-bw)",
        format_rate(k.node_bytes_per_s)));
  }
  if (!in.failure_rate_given) {
    a.push_back(fmt::format(
        "{:.3g} job interruptions per GPU-hour (default: Llama 3 405B, 419 unexpected "
        "interruptions in 54 days on 16,384 H100s, Dubey et al. 2024 Sec. 3.3.4; planned "
        "maintenance, 47 more, not counted; --failure-rate)",
        r.failures.per_gpu_hour));
  }
  if (!r.failures.restart_given) {
    a.push_back(fmt::format(
        "restart {} = {} to detect, reschedule and re-initialise (default: MegaScale's detection "
        "and diagnosis < 10 min) + {} to read the checkpoint (--restart-cost)",
        format_seconds(r.failures.restart_s), format_seconds(kDefaultRestartFixedS),
        format_seconds(k.read_s)));
  }
  if (!in.keep_last_given)
    a.push_back(fmt::format("keep the last {} checkpoints (default; --keep-last)", k.keep_last));
  a.push_back(
      "1 MiB per rank for RNG, data-loader and config state (an allowance; real states are "
      "kilobytes)");
  a.push_back(
      "writes: replicated state by data-parallel rank 0 (DeepSpeed's layout), sharded state by "
      "every rank; Megatron-LM's fully parallel torch_dist save spreads replicated state over the "
      "replicas and can be faster");
  return a;
}

std::vector<std::string> runbook_warnings(const Runbook& r) {
  std::vector<std::string> w;
  const CheckpointPlan& k = r.checkpoint;
  if (!k.disk_fits) {
    w.push_back(fmt::format(
        "keep-last {} needs {} ({} checkpoints of {} while the next is written) but the disk has "
        "{}: keep fewer (--keep-last), or get {} more",
        k.keep_last, format_bytes(k.disk_bytes), k.keep_last + 1, format_bytes(k.total_bytes),
        format_bytes(k.disk_capacity_bytes), format_bytes(k.disk_bytes - k.disk_capacity_bytes)));
  }
  if (k.keep_last == 1) {
    w.push_back(
        "keep-last 1 cannot roll back past a loss spike found after the newest checkpoint; the "
        "seed keeps the last few");
  }
  if (!r.first_order_valid) {
    w.push_back(fmt::format(
        "goodput {} is below 50%: failures come about as often as checkpoints, where the "
        "first-order model is optimistic; checkpoint faster (asynchronous saves, more storage "
        "bandwidth) or restart faster",
        format_percent(r.goodput)));
  }
  if (k.interval_given && k.effective_interval_s > 2 * k.young_interval_s) {
    w.push_back(fmt::format("the checkpoint interval {} is over twice Young's optimum {}",
                            format_seconds(k.effective_interval_s),
                            format_seconds(k.young_interval_s)));
  }
  return w;
}

std::string render_runbook(const Runbook& r, const RunbookInputs& in, const TrainingSpec& tr,
                           const ClusterSpec& c) {
  const CheckpointPlan& k = r.checkpoint;
  const FailureModel& f = r.failures;
  Table t({{"", Table::Align::left}, {"value"}, {"how", Table::Align::left}});
  t.add_row({"per parameter", fmt::format("{:g} B", k.bytes_per_param()), per_param_text(k, tr)});
  t.add_row({"total", format_bytes(k.total_bytes),
             fmt::format("{} params x {:g} B + 1 MiB x {} ranks (RNG, loader, config)",
                         format_count(k.params), k.bytes_per_param(), c.gpus)});
  t.add_row(
      {"per rank (largest)", format_bytes(k.bytes_per_rank),
       fmt::format("{} of {} ranks write weights or optimizer state", k.writing_ranks, c.gpus)});
  t.add_row(
      {"write", format_seconds(k.write_s),
       fmt::format(
           "max(busiest node {} / {}, total / {} aggregate){}", format_bytes(k.node_write_bytes),
           format_rate(k.node_bytes_per_s), format_rate(k.aggregate_bytes_per_s),
           k.write_aggregate_bound ? ": the aggregate binds" : ": the busiest node binds")});
  t.add_row({"read on restart", format_seconds(k.read_s),
             fmt::format("every rank reads what it holds: {} in all, {} on the busiest node",
                         format_bytes(k.read_total_bytes), format_bytes(k.node_read_bytes))});
  t.add_row({fmt::format("keep last {}", k.keep_last), format_bytes(k.disk_bytes),
             fmt::format("({} + 1 being written) x {}{}", k.keep_last, format_bytes(k.total_bytes),
                         k.disk_capacity_bytes > 0
                             ? fmt::format("; disk {}: {}", format_bytes(k.disk_capacity_bytes),
                                           k.disk_fits ? "fits" : "DOES NOT FIT")
                             : "")});
  t.add_rule();
  t.add_row({"interruptions", fmt::format("{:.2f}/day", f.per_day),
             fmt::format("{:.3g} per GPU-hour x {} GPUs x 24 h", f.per_gpu_hour, c.gpus)});
  t.add_row({"MTBF", format_seconds(f.mtbf_s),
             "1 / (rate x GPUs): independent failures, any one stops the job"});
  t.add_row({"restart", format_seconds(f.restart_s),
             f.restart_given
                 ? "given (--restart-cost)"
                 : fmt::format("{} detect and reschedule + {} read",
                               format_seconds(kDefaultRestartFixedS), format_seconds(k.read_s))});
  t.add_rule();
  t.add_row({"Young interval", format_seconds(k.young_interval_s),
             fmt::format("sqrt(2 x write {} x MTBF {}) (Young 1974; Daly 2006: {})",
                         format_seconds(k.write_s), format_seconds(f.mtbf_s),
                         format_seconds(k.daly_interval_s))});
  t.add_row({"interval", fmt::format("{} steps", k.interval_steps),
             fmt::format("{} {} / step {} = {}", k.interval_given ? "given" : "Young",
                         format_seconds(k.interval_s), format_seconds(r.step_s),
                         format_seconds(k.effective_interval_s))});
  t.add_row({"goodput", format_percent(r.goodput),
             fmt::format("1 / (1 + C/T {} + (T/2 + R)/M {})", format_percent(r.checkpoint_overhead),
                         format_percent(r.failure_overhead))});
  if (r.tokens > 0) {
    t.add_row(
        {"time to train", format_seconds(r.wall_s),
         fmt::format("{} tokens: {} failure-free / goodput; ~{:.0f} interruptions on the way",
                     format_count(r.tokens), format_seconds(r.compute_s), r.expected_failures)});
  }
  std::string out = "Checkpoints, failures and goodput\n" + t.render();
  out += "\nRunbook\n";
  int n = 0;
  for (const RunbookItem& item : runbook_items(r, tr))
    out += fmt::format("  {}. {}: {}\n", ++n, item.topic, item.text);
  const auto assumptions = runbook_assumptions(r, in);
  if (!assumptions.empty()) {
    out += "\nAssumptions\n";
    for (const auto& a : assumptions) out += "  - " + a + "\n";
  }
  for (const auto& w : runbook_warnings(r)) out += "warning: " + w + "\n";
  return out;
}

nlohmann::json to_json(const Runbook& r, const RunbookInputs& in, const TrainingSpec& tr) {
  const CheckpointPlan& k = r.checkpoint;
  const FailureModel& f = r.failures;
  nlohmann::json j;
  j["checkpoint"] = {{"bytes_per_param", k.bytes_per_param()},
                     {"weight_bytes_per_param", k.weight_bytes_per_param},
                     {"optimizer_bytes_per_param", k.optimizer_bytes_per_param},
                     {"small_state_bytes", k.small_state_bytes},
                     {"bytes_per_rank", k.bytes_per_rank},
                     {"total_bytes", k.total_bytes},
                     {"writing_ranks", k.writing_ranks},
                     {"node_write_bytes", k.node_write_bytes},
                     {"node_bytes_per_s", k.node_bytes_per_s},
                     {"aggregate_bytes_per_s", k.aggregate_bytes_per_s},
                     {"write_s", k.write_s},
                     {"read_bytes_per_rank", k.read_bytes_per_rank},
                     {"read_total_bytes", k.read_total_bytes},
                     {"read_s", k.read_s},
                     {"young_interval_s", k.young_interval_s},
                     {"daly_interval_s", k.daly_interval_s},
                     {"interval_s", k.interval_s},
                     {"interval_given", k.interval_given},
                     {"interval_steps", k.interval_steps},
                     {"effective_interval_s", k.effective_interval_s},
                     {"keep_last", k.keep_last},
                     {"disk_bytes", k.disk_bytes},
                     {"covered_steps", k.covered_steps}};
  if (k.disk_capacity_bytes > 0) {
    j["checkpoint"]["disk_capacity_bytes"] = k.disk_capacity_bytes;
    j["checkpoint"]["disk_fits"] = k.disk_fits;
  }
  j["failures"] = {{"per_gpu_hour", f.per_gpu_hour},
                   {"per_day", f.per_day},
                   {"mtbf_s", f.mtbf_s},
                   {"restart_s", f.restart_s},
                   {"restart_given", f.restart_given}};
  j["goodput"] = r.goodput;
  j["overheads"] = {{"checkpoint", r.checkpoint_overhead}, {"failures", r.failure_overhead}};
  j["step_s"] = r.step_s;
  j["tokens_per_s"] = r.tokens_per_s;
  if (r.tokens > 0) {
    j["training_run"] = {{"tokens", r.tokens},
                         {"compute_s", r.compute_s},
                         {"wall_s", r.wall_s},
                         {"expected_failures", r.expected_failures}};
  }
  j["operations"] = {{"collective_timeout_s", r.collective_timeout_s},
                     {"longest_wait_s", r.longest_wait_s},
                     {"straggler_drop", r.straggler_drop},
                     {"straggler_window_steps", r.straggler_window_steps}};
  nlohmann::json items = nlohmann::json::array();
  for (const RunbookItem& item : runbook_items(r, tr))
    items.push_back({{"topic", item.topic}, {"text", item.text}});
  j["procedures"] = items;
  j["assumptions"] = runbook_assumptions(r, in);
  j["warnings"] = runbook_warnings(r);
  return j;
}

}  // namespace shardplan
