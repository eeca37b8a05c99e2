// The probe: measures a cluster's collectives, GEMMs and host memory with a real communication
// library and turns the measurements into a calibrated cluster profile. What the CLI needs: the
// sweep it asks for, starting a back-end, and running the sweep to a profile. The harness,
// back-ends, control plane, watchdog and reporters are internals (src/probe/).
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shardplan/collectives.hpp"
#include "shardplan/specs.hpp"

namespace shardplan::probe {

/// Exit statuses beyond the CLI's 0/1/2: a peer stopped responding and the watchdog fired.
/// (1 = a correctness check failed, 2 = bad input or no GPU / back-end on this machine.)
inline constexpr int kExitTimeout = 3;

/// A GEMM D = A^T B (column-major, "TN", which FP8 kernels require) of m x n x k.
struct GemmShape {
  long m = 0, n = 0, k = 0;
  MathDtype dtype = MathDtype::bf16;
  std::string label;  // "sweep" or the model op, e.g. "llama-2-7b mlp up projection"
  /// Inputs scaled per block of K elements (MXFP8; NVFP4 is always block-scaled) rather than per
  /// tensor: the format row in src/probe/gemm_formats.cpp.
  bool block_scaled = false;
  double flops() const { return 2.0 * static_cast<double>(m) * n * k; }
};

struct Settings {
  int warmup = 5;
  int iters = 20;
  double timeout_s = 60;     // the watchdog: longest wait for any one operation
  int debug_hang_rank = -1;  // tests: this rank stops responding before its first collective
  int debug_slow_rank = -1;  // tests: this rank's GEMM calls take 2 ms longer (mpi back-end)
};

/// A GEMM of a named format (fp8, mxfp8, nvfp4 or fp4, bf16, fp16, tf32, fp32, fp64);
/// InputError naming `field` and the formats for an unknown name.
GemmShape gemm_shape(long m, long n, long k, const std::string& format, std::string label,
                     const std::string& field);
/// The format names gemm_shape takes, for help and messages.
std::string gemm_format_names();

/// What the probe is asked to measure.
struct SweepPlan {
  std::vector<Collective> collectives;
  size_t min_bytes = 8;
  size_t max_bytes = 1ull << 30;
  std::vector<GemmShape> gemms;  // model shapes and the size sweep, dtypes already chosen
  /// GEMM timing per shape: a warm-up of Settings::warmup calls and at least gemm_warmup_s
  /// seconds, then timed calls filling gemm_budget_s, at most gemm_max_iters.
  double gemm_warmup_s = 0.5;
  double gemm_budget_s = 1.0;
  int gemm_max_iters = 2000;
  /// Host <-> device copies: the sizes of one pinned buffer (GPU back-ends only).
  std::vector<size_t> host_link_bytes = {1ull << 20, 16ull << 20, 256ull << 20};
  /// STREAM arrays per rank; 0: 4x the last-level cache shared by the node's ranks, at least
  /// kMinStreamArrayBytes (STREAM's rule: each array at least 4x the caches).
  size_t stream_array_bytes = 0;
  bool host = true;  // measure host memory (copies to / from GPUs, CPU memory bandwidth)
  /// Node pairs (src/probe/sampling.hpp): the network's shape in nodes, at most max_pair_rounds
  /// rounds of disjoint pairs, each pair's first GPUs exchanging pair_bytes both ways. Measured
  /// after the tiers when the job spans two nodes or more; 0 rounds skips them.
  int nodes_per_domain = 1;
  int nodes_per_leaf = 0;
  int max_pair_rounds = 4;
  size_t pair_bytes = 64ull << 20;
  Settings settings;
  std::vector<std::string> notes;  // reported after the header
};
inline constexpr size_t kMinStreamArrayBytes = 64ull << 20;

/// The network's shape in nodes: nodes per scale-up domain (an NVL72 rack is 18 nodes of 4
/// GPUs; 1 where NVLink stays inside a node) and per leaf switch (0: unknown, every pair outside
/// a domain counts as across the spine).
struct NetworkShape {
  int nodes = 1;
  int nodes_per_domain = 1;
  int nodes_per_leaf = 0;
};

/// What the whole probe will do, before it starts: measurements (one row each) and the
/// expected wall time from a preset's link figures (src/probe/sampling.cpp).
struct ProbeForecast {
  int collective_rows = 0;
  int pair_rows = 0;  // node pairs measured, all rounds together
  int gemm_rows = 0;
  int host_rows = 0;
  double seconds = 0;
  std::vector<std::string> lines;  // "intra tier (8 ranks a group): 140 collective sizes, ~12 s"
  int measurements() const { return collective_rows + pair_rows + gemm_rows + host_rows; }
};
/// The forecast of `plan` on `net`: the tiers' sweeps at the links' bus bandwidth
/// (`intra_bytes_per_s` inside a node, `inter_bytes_per_s` per GPU across nodes) plus a ring
/// step's latency (`intra_step_s`, `inter_step_s`) times the collective's steps at the group size,
/// the node-pair rounds plan_pair_rounds chooses, each GEMM at its warm-up and budget, the host
/// measurements.
ProbeForecast forecast_probe(const SweepPlan& plan, const NetworkShape& net, int gpus_per_node,
                             double intra_bytes_per_s, double inter_bytes_per_s,
                             double intra_step_s, double inter_step_s);

/// What the profile starts from and what the user stated.
struct ProfileInputs {
  std::string gpu;        // --gpu NAME|FILE ("" = from --cluster, the device, or H100-SXM)
  std::string cluster;    // --cluster NAME|FILE to start from ("" = none)
  int gpus_per_node = 0;  // --gpus-per-node (0 = measured)
  int nics_per_node = 0;  // --nics-per-node (0 = preset or fitted)
  std::string command_line;
  std::string date_utc;  // ISO-8601, e.g. 2025-01-31T12:00:00Z
};

/// The GPU the profile starts from: --gpu, else the --cluster preset's, else H100-SXM.
GpuSpec profile_gpu(const ProfileInputs& inputs);

/// The back-ends compiled into this binary ("nccl", "mpi").
std::vector<std::string> built_backends();

struct Launch;  // the control plane, watchdog and back-end (src/probe/backends.hpp)

/// A started back-end, as the CLI sees it.
class Session {
 public:
  explicit Session(std::unique_ptr<Launch> launch);
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  bool lead() const;  // process 0: the one that prints and writes
  const char* backend() const;
  /// Whether GEMM measurements describe the GPU the profile is for (not a CPU stand-in).
  bool measures_gpu() const;
  std::string device() const;  // the first rank's GPU name, or the CPU model
  int ranks() const;           // every rank of the job
  int nodes() const;
  /// The GEMM formats worth sweeping on this hardware ("fp8", "bf16", ...), fastest first.
  std::vector<std::string> gemm_formats() const;
  const std::string& note() const;  // why `auto` picked what it picked
  Launch& launch() { return *launch_; }

 private:
  std::unique_ptr<Launch> launch_;
};

/// Starts `name` (auto | nccl | mpi). InputError (exit 2) when it is not built or cannot run
/// here: no CUDA driver, no GPU, NCCL missing. `auto` takes nccl when a GPU is usable.
Session start_session(const std::string& name, const Settings& settings);

/// What a sweep gives the lead process (the others get `wrong` only).
struct Calibration {
  size_t wrong = 0;        // elements that failed a correctness check (0: the profile is good)
  nlohmann::json profile;  // the calibrated cluster profile (loads through load_cluster)
  std::string summary;     // the '#' lines that close the table
  std::vector<std::string> warnings;  // what to know before trusting the profile
};

/// Runs the sweep on every process; the lead prints the nccl-tests-style table on stdout when
/// `table` and progress lines on stderr, then fits the measurements and builds the profile.
Calibration calibrate(Session& session, const SweepPlan& plan, const ProfileInputs& inputs,
                      const GpuSpec& gpu, bool table);

}  // namespace shardplan::probe
