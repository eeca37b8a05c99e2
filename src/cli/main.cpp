// shardplan's entry point: picks a subcommand from the table, maps errors to exit statuses
// (0 ok, 1 does not fit / no feasible plan, 2 bad input) and suggests the nearest subcommand.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "parse_errors.hpp"
#include "shardplan/emit.hpp"
#include "shardplan/error.hpp"
#include "shardplan/names.hpp"
#include "shardplan/version.hpp"

namespace shardplan::cli {
namespace {

// "A launcher config (DeepSpeed, Megatron-LM, ...) for a plan", from the launcher table.
const char* emit_summary() {
  static const std::string summary = "A launcher config (" + launcher_titles() + ") for a plan";
  return summary.c_str();
}

const std::vector<Command>& command_table() {
  static const std::vector<Command> table = {
      {"plan",
       "Walk the decision ladder and search every plan: the simplest that works and the fastest",
       setup_plan},
      {"memory", "Per-device memory of one plan: weights, gradients, optimizer, activations",
       setup_memory},
      {"comm", "What each parallelism sends per step, how long it takes and how much is exposed",
       setup_comm},
      {"provision",
       "Which GPUs and how many: every (GPU type, count) planned and priced, the best by a "
       "deadline",
       setup_provision},
      {"estimate", "Memory, communication and step time of one plan: tokens/s, MFU, time to train",
       setup_estimate},
      {"runbook", "Long runs: checkpoint size and interval, failures, goodput, and what to do",
       setup_runbook},
      {"emit", emit_summary(), setup_emit},
      {"validate", "Predict published training runs and report the error per case", setup_validate},
      {"calibrate",
       "Calibrate the stack's speed on this cluster from a short run's log (--calibration FILE)",
       setup_calibrate},
      {"list", "List presets: models, gpus, links, clusters", setup_list},
      {"probe", "Measure this cluster (NCCL/cuBLASLt or MPI/BLAS) and write a calibrated profile",
       setup_probe},
      {"report", "An HTML report with charts of a probe profile: bus bandwidth, GEMM throughput",
       setup_report},
  };
  return table;
}

int run(int argc, char** argv) {
  CLI::App app{
      "shardplan: plan LLM training that does not fit on one GPU: memory, communication, "
      "step time, the decision ladder, cluster probes and launcher configs."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("shardplan ") + shardplan_version());
  // A subcommand named first is the only one whose options are built (a command's start-up is
  // its own), and `--version` builds none; the others keep their names and summaries for the
  // errors and --help.
  const bool named = argc > 1 && argv[1][0] != '-';
  const bool version = argc > 1 && std::string_view(argv[1]) == "--version";
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const Command& c : command_table()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    if (version || (named && c.name != std::string_view(argv[1]))) continue;
    runners.emplace_back(sub, c.setup(*sub));
  }
  if (named) {
    const std::string wanted = argv[1];
    std::vector<std::string> names;
    for (const Command& c : command_table()) names.push_back(c.name);
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      std::fprintf(stderr,
                   "shardplan: error: unknown subcommand '%s'; did you mean '%s'? (shardplan "
                   "--help lists them)\n",
                   wanted.c_str(), nearest_names(wanted, names, 1).front().c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (argc < 2 || argv[1][0] == '-') {
      app.exit(e);
      return 2;
    }
    const CLI::App* sub = app.get_subcommand(argv[1]);
    const std::vector<std::string> args(argv + 2, argv + argc);
    std::fprintf(stderr, "shardplan: error: %s\n",
                 explain_parse_error(*sub, args, e.what()).c_str());
    return 2;
  }
  for (auto& [sub, runner] : runners) {
    if (!sub->parsed()) continue;
    refuse_empty_values(*sub);
    return runner();
  }
  return 2;
}

}  // namespace
}  // namespace shardplan::cli

int main(int argc, char** argv) {
  try {
    return shardplan::cli::run(argc, argv);
  } catch (const shardplan::InputError& e) {
    std::fprintf(stderr, "shardplan: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    // Anything else is a bug (bad input is InputError): say what escaped, then abort.
    std::fprintf(stderr, "shardplan: internal error (a bug; please report it): %s\n", e.what());
    std::abort();
  }
}
