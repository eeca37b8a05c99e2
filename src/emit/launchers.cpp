// The launcher table: one row per format with everything about it (name, the frameworks it
// launches, its document, file name, problems and its launch under Slurm), and the names, the
// parser and the help read from it. Launch lines: torchtitan's `torchtitan.train --job.config_file`
// (torchtitan v0.2.2 run_train.sh), DeepSpeed's `--deepspeed --deepspeed_config` (deepspeed
// add_config_arguments), accelerate's `launch --config_file --machine_rank --main_process_ip
// --main_process_port` (accelerate launch --help); Megatron's script runs torchrun itself.
#include <fmt/format.h>

#include "common.hpp"
#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan {
namespace {

std::string megatron_launch(const EmitInputs&, const std::string&, const std::string& config) {
  return "bash " + config;  // the script runs torchrun itself; NODE_RANK from SLURM_NODEID
}

std::string torchtitan_launch(const EmitInputs&, const std::string& torchrun,
                              const std::string& config) {
  return torchrun + " -m torchtitan.train --job.config_file " + config;
}

// Under Slurm torchrun starts the ranks (the deepspeed runner needs a hostfile and ssh).
std::string deepspeed_launch(const EmitInputs&, const std::string& torchrun,
                             const std::string& config) {
  return torchrun + " train.py --deepspeed --deepspeed_config " + config;
}

std::string accelerate_launch(const EmitInputs& in, const std::string&, const std::string& config) {
  return fmt::format(
      "bash -c 'ACCELERATE_GRADIENT_ACCUMULATION_STEPS={} accelerate launch --config_file {} "
      "--machine_rank \"${{NODE_RANK:-$SLURM_NODEID}}\" --main_process_ip \"$MASTER_ADDR\" "
      "--main_process_port \"$MASTER_PORT\" train.py'",
      accumulation_steps(in), config);
}

std::vector<LaunchEnv> deepspeed_env(const EmitInputs& in) {
  return {{"DEEPSPEED_TIMEOUT", std::to_string(in.settings.timeout_minutes),
           "minutes (deepspeed.comm)"}};
}

}  // namespace

// The table. A function's static, so that tables initialised before main find it built.
const std::vector<LauncherRow>& launcher_rows() {
  static const std::vector<LauncherRow> rows = {
      {LauncherFormat::deepspeed,
       "deepspeed",
       "DeepSpeed",
       {Framework::deepspeed},
       "ds_config.json",
       deepspeed_problems,
       [](const EmitInputs& in) { return write_deepspeed(emit_deepspeed(in)); },
       deepspeed_launch,
       deepspeed_env},
      {LauncherFormat::megatron,
       "megatron",
       "Megatron-LM",
       {Framework::megatron},
       "megatron.sh",
       megatron_problems,
       [](const EmitInputs& in) { return write_megatron(emit_megatron(in)); },
       megatron_launch,
       nullptr},
      {LauncherFormat::torchtitan,
       "torchtitan",
       "torchtitan",
       {Framework::torchtitan},
       "torchtitan.toml",
       torchtitan_problems,
       [](const EmitInputs& in) { return write_torchtitan(emit_torchtitan(in)); },
       torchtitan_launch,
       nullptr},
      {LauncherFormat::accelerate,
       "accelerate",
       "accelerate",
       {Framework::fsdp},
       "accelerate.yaml",
       accelerate_problems,
       [](const EmitInputs& in) { return write_accelerate(emit_accelerate(in)); },
       accelerate_launch,
       nullptr},
  };
  return rows;
}

const LauncherRow& launcher_row(LauncherFormat f) {
  const LauncherRow* r = find_row(launcher_rows(), &LauncherRow::format, f);
  SHARDPLAN_CHECK(r != nullptr, "launcher format missing from its table");
  return *r;
}

const char* to_string(LauncherFormat f) {
  return launcher_row(f).name;
}

std::string launcher_names(const std::string& separator) {
  return join_field(launcher_rows(), &LauncherRow::name, separator);
}

std::string launcher_titles() {
  return join_field(launcher_rows(), &LauncherRow::title, ", ");
}

std::string launcher_format_help() {
  std::string renamed;  // frameworks whose launcher has another name
  for (const LauncherRow& r : launcher_rows()) {
    for (Framework f : r.frameworks) {
      if (default_format(f) == r.format && r.name != std::string(to_string(f)))
        renamed += fmt::format("; {}: {}", to_string(f), r.name);
    }
  }
  return launcher_names(" | ") + " (default: the plan's framework's launcher" + renamed + ")";
}

LauncherFormat parse_launcher_format(const std::string& text, const std::string& field) {
  if (const LauncherRow* r = find_row(launcher_rows(), &LauncherRow::name, text)) return r->format;
  throw InputError(field,
                   "'" + text + "' is not a launcher format; use " + or_last(launcher_names(", ")));
}

LauncherFormat default_format(Framework f) {
  for (const LauncherRow& r : launcher_rows()) {
    if (!r.frameworks.empty() && r.frameworks.front() == f) return r.format;
  }
  for (const LauncherRow& r : launcher_rows()) {
    for (Framework served : r.frameworks) {
      if (served == f) return r.format;
    }
  }
  throw InputError("--format", fmt::format("no launcher format launches framework {}; use {}",
                                           to_string(f), launcher_names(", ")));
}

Framework framework_of(LauncherFormat f) {
  return launcher_row(f).frameworks.front();
}

std::vector<PlanProblem> launcher_problems(LauncherFormat f, const EmitInputs& in) {
  return launcher_row(f).problems(in);
}

std::string emit_text(LauncherFormat f, const EmitInputs& in) {
  SHARDPLAN_CHECK(launcher_problems(f, in).empty(),
                  "emit_text needs a plan the launcher can express");
  return launcher_row(f).text(in);
}

}  // namespace shardplan
