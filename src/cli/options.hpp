// Flags shared by the planning subcommands and their resolution into the engine's specs (the
// flags as a table: planning_flags.hpp; with --from FILE: planning_inputs.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/profiles.hpp"
#include "shardplan/specs.hpp"
#include "shardplan/step_time.hpp"

namespace shardplan::cli {

/// Raw flag text; numbers stay strings so that "7B" parses and errors name the flag.
struct PlanningOptions {
  // model
  std::string model, params;
  std::string layers, hidden, heads, kv_heads, ffn_hidden, vocab, mlp, experts, top_k;
  std::string norm, positions, embeddings, bias;  // conventions a model from flags leaves open
  // training
  std::string seq_len, global_batch, micro_batch, precision, optimizer, attention;
  std::string fragmentation, tokens, gpu_hour_cost;
  std::string capacity_factor;
  std::string moe_max_load, moe_dispatcher, cuda_graphs;
  std::string cp_kind;  // --cp-kind: ring | ulysses
  bool moe_force_balance = false;
  bool moe_fp8_dispatch = false;
  std::string framework;  // megatron (default) | deepspeed | torchtitan | fsdp
  bool fp32_grads = false;
  bool no_overlap = false;
  bool tp_comm_overlap = false;
  bool compiled_loss = false;
  bool full_vocab_loss = false;
  // cluster
  std::string cluster, gpu, gpus, gpus_per_node, gpus_per_domain, nics_per_node, intra, inter, link;
  std::string headroom;  // memory each device keeps free: "8GiB" or "10%"
  // plan
  std::string dp, tp, pp, cp, ep, zero, recompute, interleave;
  std::string recompute_modules;  // Megatron-Core's modules, under --recompute selective
  std::string schedule, first_stage_layers, last_stage_layers;
  std::string expert_tp;
  std::string dp_shard;   // --dp-shard N: hybrid sharding (HSDP)
  std::string grad_sync;  // --grad-sync framework | every-micro-batch | deferred
  std::string offload, offload_to;
  std::string offload_activation_layers;  // --offload-activation-layers N
  bool sequence_parallel = false;
  bool moe_a2a_overlap = false;
  bool allow_tp_across_nodes = false;
  // a launcher config whose settings fill the flags above (--from FILE)
  std::string from;
  std::vector<std::string> from_set;  // --set NAME=VALUE: a variable the file leaves open
  // a calibration file `shardplan calibrate` wrote (--calibration FILE)
  std::string calibration;
  // output
  bool json = false;
};

void add_json_option(CLI::App& app, PlanningOptions& o);
/// --offload's comma list, --offload-to and --offload-activation-layers; exit-2 errors name the
/// flag.
Offload parse_offload(const std::string& list, const std::string& to,
                      const std::string& activation_layers = "");
/// --calibration FILE (a file `shardplan calibrate` wrote).
void add_calibration_option(CLI::App& app, PlanningOptions& o);

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  std::vector<std::string> notes;  // defaults taken and choices made for the user, said once
};

ModelSpec resolve_model(const PlanningOptions& o);
ClusterSpec resolve_cluster(const PlanningOptions& o, int default_gpus);
/// --headroom on `gpu`: "10%" of its memory or a size with a unit ("8GiB"); exit 2 naming the
/// flag for a bare number, a negative one or one the device cannot leave free.
double parse_headroom(const std::string& text, const GpuSpec& gpu);
TrainingSpec resolve_training(const PlanningOptions& o, const ModelSpec& model);
/// The default global batch (kDefaultTokensPerStep, rounded up to a multiple of `multiple_of`)
/// when --global-batch was not given, with a note saying so; otherwise nothing changes.
void fill_default_global_batch(Inputs& in, int multiple_of);
/// Adds the warning the training precision carries (pure bf16) to the notes, once.
void note_precision(Inputs& in);
/// Adds what the cluster's links must be said to be (a probe that measured CPU processes, not
/// GPUs: cluster_notes) to the notes.
void note_cluster(Inputs& in);

/// The plan the Plan flags describe, before the cluster sets the data-parallel degree (dp 0
/// unless --dp is given); the one place plan flags become a ParallelPlan. InputError names the
/// flag whose text is bad.
ParallelPlan plan_from_flags(const PlanningOptions& o);

/// Model, cluster, training and the one plan the flags alone describe (o.from is not read, and
/// --calibration is not applied: resolve_inputs in planning_inputs.hpp does both); InputError
/// (exit 2) when the plan cannot run, naming the flag to change.
Inputs resolve_flag_inputs(const PlanningOptions& o);

/// --calibration FILE applied to `in`: the stack speed it fitted on the framework profile, its
/// interval and reach in place of the class's, and a note. False when not given, or (with
/// `required` false) when it calibrates another stack or GPU class; with `required`, that is an
/// InputError naming --calibration. (resolve_inputs applies it, required.)
bool apply_calibration(const PlanningOptions& o, Inputs& in, bool required = true);

/// The model / cluster / plan / training lines that head a command's table.
std::string describe_inputs(const Inputs& in);

/// Adds the "model", "cluster", "plan" and "training" objects every --json output carries (and
/// that `emit --plan` reads back).
void add_inputs_json(nlohmann::json& j, const Inputs& in);

/// --trace FILE: one simulated step as Chrome Trace Event JSON.
void add_trace_option(CLI::App& app, std::string& path);
/// Writes the step's timeline to `path` atomically (nothing when `path` is empty).
void write_trace(const std::string& path, const Inputs& in, const Estimate& estimate);

/// The version of every command's --json layout: raised when a field is renamed or removed
/// (fields are only ever added within a version). docs/schema/ holds one schema per command.
inline constexpr int kJsonSchemaVersion = 2;

/// Appends `notes` to j["notes"] (made an array if absent).
void add_notes_json(nlohmann::json& j, const std::vector<std::string>& notes);

/// Writes JSON with a trailing newline, stamped with "schema_version" (move a large document in:
/// it is stamped in place).
void print_json(nlohmann::json j);

}  // namespace shardplan::cli
