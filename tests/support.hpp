// Helpers shared by the test suites: presets, specs for a plan, and running the CLI binary.
#pragma once

#include <string>
#include <vector>

#include "shardplan/profiles.hpp"
#include "shardplan/specs.hpp"

namespace shardplan::test {

/// A GPT-3-style model (4h GeLU MLP, dropout, learned positions, tied embeddings, vocab 51200),
/// the shape of the Megatron-LM papers' runs.
ModelSpec gpt(int layers, int hidden, int heads, int vocab = 51200, int seq = 2048);

/// A cluster of `gpus` GPUs of a preset node (default dgx-a100).
ClusterSpec cluster(int gpus, const std::string& preset = "dgx-a100");

ParallelPlan plan(int dp, int tp, int pp, int micro_batch = 1);

TrainingSpec training(int seq_len, int global_batch);

/// The share of its tile slots a GEMM output of `problems` x rows x cols fills on `sms` SMs, in
/// 128 x 256 tiles (docs/design.md, Compute): written out here apart from the engine's.
double tile_wave_share(double rows, double cols, double problems, double sms);

/// Runs `shardplan ARGS`; stdout and stderr are captured separately.
struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
  double seconds = 0;  // wall time
};
CliResult run_cli(const std::string& args);
/// Runs a shell command line (for example mpirun ... shardplan ...) the same way.
CliResult run_command(const std::string& command);

/// Runs `shardplan ARGS` and checks it is refused as bad input: exit status 2, `needle` (the
/// field, or the reason) in stderr, nothing on stdout.
void check_refused(const std::string& args, const std::string& needle);

/// A model known only by its parameter count (--params).
ModelSpec params_only(double params);

/// A fresh directory under /tmp; file helpers for tests that write and read files.
std::string make_temp_dir();
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

/// The lines of `v`, each ended by a newline (what a launcher's argv or a config's lines read
/// as one text).
std::string joined(const std::vector<std::string>& v);

/// Whether `part` occurs in `s` (for checking what a command printed).
bool contains(const std::string& s, const std::string& part);

/// Whether any src=, href= or url( in an HTML page points at a remote resource (http:, https:,
/// //): what a self-contained report must not hold.
bool references_remote(const std::string& page);

/// Relative error |a - b| / |b|.
double rel_err(double a, double b);

}  // namespace shardplan::test
