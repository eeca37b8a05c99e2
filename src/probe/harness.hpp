// The harness's results and the reporters that print them as they come (harness.cpp,
// report.cpp).
#pragma once

#include <array>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "backend.hpp"
#include "control.hpp"

namespace shardplan::probe {

/// Time across ranks: each rank's mean iteration (nccl-tests' time), then min / avg / max over
/// ranks; and the average over ranks of each rank's median iteration, which the fit uses because
/// one preempted iteration moves a mean but not a median.
struct TimeStats {
  double min_s = 0, avg_s = 0, max_s = 0;
  double median_s = 0;
};

struct CollectiveRow {
  GroupInfo group;
  CollectiveShape shape;
  TimeStats time;
  double algbw_bytes_per_s = 0;  // from the average time, as nccl-tests prints it
  double busbw_bytes_per_s = 0;
  size_t wrong = 0;
  std::vector<std::pair<int, double>> rank_s;  // (rank, mean iteration seconds)
  std::string call;  // the library call that was timed, as the back-end names it
};

struct GemmRow {
  GemmShape shape;
  TimeStats time;
  double flops_per_s = 0;  // flops / the median call (TimeStats::median_s)
  size_t wrong = 0;
  int iters = 0;
  std::string detail;
  std::vector<std::pair<int, double>> rank_s;
};

/// One node pair of a sampling round: both nodes' first ranks exchanged `bytes` both ways.
struct PairRow {
  int offset = 0;  // the round: node a XOR offset = node b
  int node_a = 0, node_b = 0;
  int rank_a = 0, rank_b = 0;
  std::string host_a, host_b;
  std::string where;  // to_string(PairClass)
  size_t bytes = 0;
  double seconds = 0;      // the slower side's median exchange
  double bytes_per_s = 0;  // bytes / seconds, one direction
  size_t wrong = 0;
};

/// One host-memory measurement across ranks. Link copies: `rank_bytes_per_s` is one GPU's rate
/// (moved bytes / the average over ranks of each rank's mean iteration, as nccl-tests' algbw).
/// STREAM: `node_bytes_per_s` is the node's rate, every rank's moved bytes over its own mean
/// iteration summed over the node's ranks (they run at once), the slowest node's.
struct HostRow {
  HostMoveShape shape;
  TimeStats time;
  double rank_bytes_per_s = 0;
  double node_bytes_per_s = 0;
  size_t wrong = 0;
  std::vector<std::pair<int, double>> rank_s;
};

/// Receives results as they come; the table and the progress lines are reporters.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void start(const std::string& /*backend*/, const std::vector<RankInfo>& /*ranks*/,
                     const SweepPlan& /*plan*/) {}
  virtual void section(const GroupInfo& /*group*/, Collective /*c*/) {}
  virtual void row(const CollectiveRow& /*row*/) {}
  virtual void section_end(const GroupInfo& /*group*/, Collective /*c*/,
                           std::span<const CollectiveRow> /*rows*/) {}
  virtual void gemm_row(const GemmRow& /*row*/) {}
  virtual void host_row(const HostRow& /*row*/) {}
  virtual void pair_row(const PairRow& /*row*/) {}
  virtual void note(const std::string& /*text*/) {}
};

struct Results {
  std::string backend;
  SweepPlan plan;
  std::vector<RankInfo> ranks;
  std::vector<GroupInfo> groups;
  std::vector<CollectiveRow> rows;
  std::vector<GemmRow> gemms;
  std::vector<HostRow> host;
  std::vector<PairRow> pairs;
  std::vector<std::string> notes;
  nlohmann::json libraries;
  bool gemm_on_gpu = false;
  std::array<std::string, 3> link_medium;  // per Tier: Backend::link_medium
  size_t wrong() const;
};

/// Runs the whole sweep. Every process takes part; reporters are called on process 0 only.
Results run_probe(Backend& backend, Control& control, Watchdog& watchdog, const SweepPlan& plan,
                  Reporter& reporter);

/// Every process's timings of one operation, gathered over the control plane: per-rank means,
/// min / avg / max, wrong elements.
struct Gathered {
  std::vector<std::pair<int, double>> rank_s;
  std::vector<std::pair<int, size_t>> rank_wrong;
  size_t wrong = 0;
  std::string detail;
  TimeStats time;
  bool ran = true;     // false when a rank could not run it (no kernel for a GEMM shape)
  int iterations = 0;  // the fewest timed iterations of any rank
};
/// The fewest timed calls a GEMM gets, whatever its budget: enough for a median.
inline constexpr int kMinGemmIters = 5;
Gathered gather(Control& control, const std::vector<RankTiming>& mine, const std::string& what);

/// The host-memory measurements the back-end makes (host_sweep.cpp), after the GEMMs.
void measure_host(Backend& backend, Control& control, const SweepPlan& plan, Reporter& reporter,
                  Results& results);
/// Each rank's STREAM array: 4x the node's last-level caches shared among its `ranks_on_node`,
/// at least kMinStreamArrayBytes (`llc_bytes`: the node's, 0 when unknown).
size_t stream_array_bytes(size_t llc_bytes, int ranks_on_node);
/// The node's last-level cache bytes, summed over its instances (sysfs), 0 when unknown.
size_t node_llc_bytes();
/// STREAM (dram_copy or dram_triad) on this process with `threads` threads, `barrier` before
/// every iteration so the node's processes run together; `rank` names the result. What every
/// back-end runs for the node's memory bandwidth (host_sweep.cpp).
RankTiming stream_on_process(const HostMoveShape& shape, const Settings& settings, int threads,
                             int rank, const std::function<void()>& barrier);

/// Which CUDA device a process drives when every process drives one GPU: `local_index` among
/// `local_processes` on its node, `visible` devices seen. Its own device when it sees at least
/// one per process; device 0 when it sees exactly one (per-task binding: srun --gpus-per-task=1
/// or a per-rank CUDA_VISIBLE_DEVICES); otherwise `error` says what to change.
struct DevicePick {
  int device = -1;
  std::string error;
};
DevicePick pick_local_device(int local_index, int local_processes, int visible,
                             const std::string& host);
/// The NUMA node of a PCI device ("0000:18:00.0", any case) from
/// <sysfs>/bus/pci/devices/<id>/numa_node; -1 when unknown (no such file, or -1 written there).
int numa_node_of_pci(const std::string& bus_id, const std::string& sysfs = "/sys");

/// nccl-tests-style table: per collective and tier a names line and a units line, '#' before
/// every non-data line, and a footer verdict; then the GEMM rows.
std::unique_ptr<Reporter> make_table_reporter(std::FILE* out);
/// One line per measurement while the sweep runs (for stderr).
std::unique_ptr<Reporter> make_progress_reporter(std::FILE* out);
/// Several reporters as one.
std::unique_ptr<Reporter> make_tee_reporter(std::vector<std::unique_ptr<Reporter>> parts);

}  // namespace shardplan::probe
