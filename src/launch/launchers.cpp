// The launcher table: one row per format with everything about it both ways (name, the frameworks
// it launches, its document, file name, problems, its launch under Slurm, and how a config of its
// is recognised and read back), and the names, the parser, the help and --from's reader choice
// read from it. Launch lines: torchtitan's `torchtitan.train --job.config_file`
// (torchtitan v0.2.2 run_train.sh), DeepSpeed's `--deepspeed --deepspeed_config` (deepspeed
// add_config_arguments), accelerate's `launch --config_file --machine_rank --main_process_ip
// --main_process_port` (accelerate launch --help); Megatron's script runs torchrun itself.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common.hpp"
#include "read_parts.hpp"
#include "shardplan/error.hpp"
#include "shardplan/launcher_config_reader.hpp"
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

// What a file without a known extension holds first: a JSON object, a launch script's marks, a
// TOML table, accelerate's distributed_type. The rows are tried in order, DeepSpeed first.
bool looks_deepspeed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

bool looks_megatron(const std::string& text) {
  return text.find("--tensor-model-parallel-size") != std::string::npos ||
         text.find("pretrain_gpt") != std::string::npos || text.find("#!") == 0;
}

bool looks_torchtitan(const std::string& text) {
  return text.find("[parallelism]") != std::string::npos || text.find("[job]") != std::string::npos;
}

bool looks_accelerate(const std::string& text) {
  return text.find("distributed_type:") != std::string::npos;
}

// The readers that need nothing from outside the file.
template <LauncherConfig (*reader)(const std::string&, const std::string&)>
LauncherConfig file_only(const std::string& text, const std::string& path, const ConfigInputs&) {
  return reader(text, path);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && lowered(s.substr(s.size() - tail.size())) == tail;
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
       deepspeed_env,
       "config JSON",
       {".json"},
       looks_deepspeed,
       file_only<config::read_deepspeed>},
      {LauncherFormat::megatron,
       "megatron",
       "Megatron-LM",
       {Framework::megatron},
       "megatron.sh",
       megatron_problems,
       [](const EmitInputs& in) { return write_megatron(emit_megatron(in)); },
       megatron_launch,
       nullptr,
       "launch script or argument list",
       {".sh", ".bash", ".args", ".txt"},
       looks_megatron,
       config::read_megatron},
      {LauncherFormat::torchtitan,
       "torchtitan",
       "torchtitan",
       {Framework::torchtitan},
       "torchtitan.toml",
       torchtitan_problems,
       [](const EmitInputs& in) { return write_torchtitan(emit_torchtitan(in)); },
       torchtitan_launch,
       nullptr,
       "job config TOML",
       {".toml"},
       looks_torchtitan,
       file_only<config::read_torchtitan>},
      {LauncherFormat::accelerate,
       "accelerate",
       "accelerate",
       {Framework::fsdp},
       "accelerate.yaml",
       accelerate_problems,
       [](const EmitInputs& in) { return write_accelerate(emit_accelerate(in)); },
       accelerate_launch,
       nullptr,
       "config YAML",
       {".yaml", ".yml"},
       looks_accelerate,
       file_only<config::read_accelerate>},
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

const char* launcher_title(LauncherFormat f) {
  return launcher_row(f).title;
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

// The extension first; without a known one, the first row whose contents it recognises.
LauncherConfig read_launcher_config(const std::string& text, const std::string& path,
                                    const ConfigInputs& inputs) {
  for (const LauncherRow& r : launcher_rows()) {
    for (const char* e : r.extensions)
      if (ends_with(path, e)) return r.read(text, path, inputs);
  }
  for (const LauncherRow& r : launcher_rows()) {
    if (r.recognises(text)) return r.read(text, path, inputs);
  }
  std::vector<std::string> names;
  for (const LauncherRow& r : launcher_rows())
    names.push_back(fmt::format("{} ({} {})", r.extensions.front(), r.title, r.config_kind));
  throw InputError("--from", fmt::format("'{}' is not a launcher config shardplan recognises; name "
                                         "it {}",
                                         path, or_last(fmt::format("{}", fmt::join(names, ", ")))));
}

}  // namespace shardplan
