// The probe: measures a cluster's collectives and GEMMs with a real communication library and
// turns the measurements into a calibrated cluster profile. A generic harness (size sweep,
// warm-up, timed iterations, min/avg/max across ranks, correctness check, watchdog) drives small
// back-ends (NCCL + cuBLASLt, MPI + OpenBLAS); time, algbw and busbw follow nccl-tests'
// doc/PERFORMANCE.md through the shared collectives table.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "shardplan/collectives.hpp"
#include "shardplan/specs.hpp"

namespace shardplan::probe {

/// Exit statuses beyond the CLI's 0/1/2: a peer stopped responding and the watchdog fired.
/// (1 = a correctness check failed, 2 = bad input or no GPU / back-end on this machine.)
inline constexpr int kExitTimeout = 3;

/// The groups the probe measures separately. intra: the ranks of one node (one group per node,
/// all measured at once); inter: one rank per node (local rank 0), i.e. one NIC's worth;
/// world: every rank.
enum class Tier { intra, inter, world };
inline constexpr Tier kTiers[] = {Tier::intra, Tier::inter, Tier::world};
const char* to_string(Tier t);

/// One rank of the job; every process holds the same list.
struct RankInfo {
  int rank = 0;
  int process = 0;     // the process driving it (one process may drive several GPUs)
  int node = 0;        // 0 .. nodes-1, in order of the nodes' first ranks
  int local_rank = 0;  // position inside its node
  std::string host;
  std::string device;              // GPU name, or the CPU model for the MPI back-end
  double device_memory_bytes = 0;  // the GPU's memory as the driver reports it; 0 on a CPU
};

/// How a tier's groups sit on the job; `skipped` says why a tier is not measured.
struct GroupInfo {
  Tier tier = Tier::world;
  int ranks = 0;           // ranks in one group
  int ranks_per_node = 0;  // of those, how many share a node
  int groups = 0;          // groups measured at the same time
  std::string skipped;
};

/// Which groups each tier has on this layout of ranks (see Tier), and which tiers are skipped:
/// intra with one rank per node or uneven nodes, inter and world on one node, world when it is
/// the inter tier (one rank per node).
std::vector<GroupInfo> plan_groups(const std::vector<RankInfo>& ranks);

/// One collective of nccl-tests size S on n ranks, in float elements (nccl-tests' default type).
struct CollectiveShape {
  Collective kind = Collective::all_reduce;
  int ranks = 1;
  size_t bytes = 0;       // S as nccl-tests prints it, rounded down to whole elements per rank
  size_t send_count = 0;  // elements in each rank's send buffer
  size_t recv_count = 0;  // elements in each rank's receive buffer
  size_t count() const { return bytes / sizeof(float); }
};
/// bytes == 0 when S is too small to give every rank one element.
CollectiveShape shape_of(Collective c, size_t bytes, int ranks);

/// The data each rank sends (a pattern of small integers, exact in float after any sum) and how
/// many received elements differ from what the collective must produce: nccl-tests' check.
void fill_send(const CollectiveShape& s, int rank, std::span<float> send);
size_t count_wrong(const CollectiveShape& s, int rank, std::span<const float> recv);
/// A value no collective produces from fill_send's data, to pre-fill receive buffers with.
inline constexpr float kPoison = -1.0f;

/// A GEMM D = A^T B (column-major, "TN", which FP8 kernels require) of m x n x k.
struct GemmShape {
  long m = 0, n = 0, k = 0;
  MathDtype dtype = MathDtype::bf16;
  std::string label;  // "sweep" or the model op, e.g. "llama-2-7b mlp up projection"
  double flops() const { return 2.0 * static_cast<double>(m) * n * k; }
};

/// GEMM inputs: A (k x m, column-major) and B (k x n) hold values from {-1, -0.5, 0, 0.5, 1},
/// exact in every type down to FP8 E4M3; index 0 of the set is -1.
int gemm_input_code(int matrix, size_t index);  // 0 .. 4; matrix 0 = A, 1 = B
inline constexpr float kGemmValues[5] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f};
/// The outputs D(i, j) the harness checks: corners and a few spread over D.
std::vector<std::pair<long, long>> gemm_check_points(const GemmShape& shape);
/// Whether D(i, j) is within 1% of the exact result (16-bit and FP8 outputs round).
bool gemm_output_ok(const GemmShape& shape, long i, long j, double value);

/// Seconds of each timed iteration on one rank (nccl-tests averages them per rank, then across
/// ranks), and the elements that failed the correctness check.
struct RankTiming {
  int rank = 0;
  std::vector<double> iteration_s;
  size_t wrong = 0;
  std::string detail;  // GEMMs: the kernel or library call that ran
};

struct Settings {
  int warmup = 5;
  int iters = 20;
  double timeout_s = 60;     // the watchdog: longest wait for any one operation
  int debug_hang_rank = -1;  // tests: this rank stops responding before its first collective
};

/// The control plane: how processes find each other, exchange results and give up together.
/// MPI when launched by mpirun/srun, or a single process. Waits go through the Watchdog.
class Watchdog;
class Control {
 public:
  virtual ~Control() = default;
  virtual int process() const = 0;
  virtual int processes() const = 0;
  virtual int node() const = 0;         // this process's node, 0 .. nodes-1
  virtual int local_index() const = 0;  // this process's position inside its node
  virtual std::string host() const = 0;
  /// Every process's `mine`, in process order.
  virtual std::vector<std::string> allgather(const std::string& mine, const std::string& what) = 0;
  virtual void barrier(const std::string& what) = 0;
  /// Called while waiting: answers peers that ask whether this process is alive.
  virtual void service() {}
  /// After a timeout: the processes that answer within `grace_s` (this one included).
  virtual std::vector<int> roll_call(double grace_s) = 0;
  [[noreturn]] virtual void abort(int status) = 0;
  /// "Open MPI v4.1.4 ..." or empty.
  virtual std::string library() const = 0;
  void attach(Watchdog* watchdog) { watchdog_ = watchdog; }

 protected:
  Watchdog* watchdog_ = nullptr;
};

/// A single process: the NCCL back-end driving every local GPU, as nccl-tests' `-g`.
std::unique_ptr<Control> make_local_control();

/// Every wait in a back-end polls through here. When nothing completes for `timeout_s` the
/// watchdog prints host:file:line, the rank and the operation, asks which peers still answer,
/// names those that do not, and ends the probe with kExitTimeout: a probe never hangs.
class Watchdog {
 public:
  Watchdog(Control& control, double timeout_s);
  ~Watchdog();
  /// Polls `done` (serving peers in between) until it returns true or the timeout passes;
  /// `describe` may add what the back-end knows at that moment (which ranks finished).
  void wait(const std::function<bool()>& done, const std::string& what, const char* file, int line,
            const std::function<std::string()>& describe = {});
  /// Reports a timeout (or a peer's failure in `detail`) and ends the probe.
  [[noreturn]] void fire(const std::string& what, const char* file, int line,
                         const std::string& detail = "");
  /// Runs before the report is printed: back-ends abort their communicators here.
  void on_fire(std::function<void()> cleanup) { cleanup_ = std::move(cleanup); }
  /// Which global ranks this process drives, for the report.
  void set_local_ranks(std::vector<int> ranks, std::vector<RankInfo> all);
  double timeout_s() const { return timeout_s_; }

  /// For calls that cannot be polled (communicator creation): a thread ends the probe with the
  /// same report if the scope is still open after the timeout.
  class Guard {
   public:
    Guard(Watchdog& w, std::string what, const char* file, int line);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    struct State;
    std::shared_ptr<State> state_;
  };

 private:
  std::string who() const;
  Control& control_;
  double timeout_s_;
  std::function<void()> cleanup_;
  std::vector<int> local_ranks_;
  std::vector<RankInfo> ranks_;
};

/// A back-end: a communication library and a GEMM library behind a small interface. The harness
/// owns everything else. Groups follow Tier: intra = ranks of a node by local rank, inter = local
/// rank 0 of every node by node, world = all ranks by rank.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  /// Every rank of the job (the same list on every process) and those this process drives.
  virtual const std::vector<RankInfo>& ranks() const = 0;
  virtual std::vector<int> local_ranks() const = 0;
  /// Creates the communicators of a tier (collective over all processes).
  virtual void open(Tier tier) = 0;
  /// Fills with fill_send, runs once and counts wrong elements, then warm-up and timed
  /// iterations. One RankTiming per local rank that belongs to one of the tier's groups.
  virtual std::vector<RankTiming> collective(Tier tier, const CollectiveShape& shape,
                                             const Settings& settings) = 0;
  /// The rank stops issuing work (tests of the watchdog); false: the harness stops the process.
  virtual bool hang(int /*rank*/) { return false; }
  virtual bool supports(MathDtype dtype) const = 0;
  /// Runs the GEMM on every local rank at once; `wrong` counts checked outputs off by > 1%.
  virtual std::vector<RankTiming> gemm(const GemmShape& shape, int warmup, int iters) = 0;
  /// Library versions, driver, devices: the provenance block's "libraries".
  virtual nlohmann::json libraries() const = 0;
  /// The GEMM data types worth sweeping on this hardware, fastest first.
  virtual std::vector<MathDtype> gemm_dtypes() const = 0;
  /// Whether GEMM measurements describe the GPU the profile is for (not a CPU stand-in).
  virtual bool measures_gpu() const = 0;
};

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
};

struct GemmRow {
  GemmShape shape;
  TimeStats time;
  double flops_per_s = 0;  // flops / average time
  size_t wrong = 0;
  int iters = 0;
  std::string detail;
  std::vector<std::pair<int, double>> rank_s;
};

/// What the probe is asked to measure.
struct SweepPlan {
  std::vector<Collective> collectives;
  size_t min_bytes = 8;
  size_t max_bytes = 1ull << 30;
  std::vector<GemmShape> gemms;  // model shapes and the size sweep, dtypes already chosen
  double gemm_budget_s = 1.0;    // per shape: fewer iterations than Settings::iters if slower
  Settings settings;
  std::vector<std::string> notes;  // reported after the header
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
  virtual void note(const std::string& /*text*/) {}
};

struct Results {
  std::string backend;
  SweepPlan plan;
  std::vector<RankInfo> ranks;
  std::vector<GroupInfo> groups;
  std::vector<CollectiveRow> rows;
  std::vector<GemmRow> gemms;
  std::vector<std::string> notes;
  nlohmann::json libraries;
  bool gemm_on_gpu = false;
  size_t wrong() const;
};

/// Runs the whole sweep. Every process takes part; reporters are called on process 0 only.
Results run_probe(Backend& backend, Control& control, Watchdog& watchdog, const SweepPlan& plan,
                  Reporter& reporter);

/// nccl-tests-style table: per collective and tier a names line and a units line, '#' before
/// every non-data line, and a footer verdict; then the GEMM rows.
std::unique_ptr<Reporter> make_table_reporter(std::FILE* out);
/// One line per measurement while the sweep runs (for stderr).
std::unique_ptr<Reporter> make_progress_reporter(std::FILE* out);
/// Several reporters as one.
std::unique_ptr<Reporter> make_tee_reporter(std::vector<std::unique_ptr<Reporter>> parts);

// ---- fit -----------------------------------------------------------------------------------

/// t = latency + S x bus factor / busbw: busbw from the least-squares slope over the largest
/// sizes (within 16x of the largest), latency from every size with that slope fixed, weighted by
/// 1/t^2 so the small sizes decide it; the residual is the RMS relative error over all sizes.
struct LinkFit {
  double latency_s = 0;          // the whole collective's fixed cost
  double step_latency_s = 0;     // per ring step (latency / info(c).latency_steps(n))
  double busbw_bytes_per_s = 0;  // asymptotic bus bandwidth
  double residual = 0;           // RMS relative error of the fitted times
  int points = 0;
};
/// A fit whose RMS relative residual passes this does not describe the link: a straight line
/// that misses the measured times by more than a quarter (contention, a protocol switch between
/// sizes, or too few iterations). The summary flags it; its latency and busbw are rough.
inline constexpr double kResidualWarning = 0.25;
struct SizeTime {
  double bytes = 0;
  double seconds = 0;
};
LinkFit fit_link(Collective c, int ranks, std::span<const SizeTime> points);

/// A rank whose time exceeds the median across ranks by more than the threshold.
inline constexpr double kStragglerThreshold = 1.20;
struct Straggler {
  std::string what;
  int rank = 0;
  std::string host;
  double seconds = 0;
  double median_s = 0;
  double ratio = 0;
};
std::vector<Straggler> find_stragglers(const std::string& what,
                                       std::span<const std::pair<int, double>> rank_s,
                                       const std::vector<RankInfo>& ranks,
                                       double threshold = kStragglerThreshold);

/// Per tier, per collective fits; the GEMM curve; stragglers.
struct TierFit {
  GroupInfo group;
  std::vector<std::pair<Collective, LinkFit>> collectives;
  const LinkFit* find(Collective c) const;
};
struct FitResult {
  std::vector<TierFit> tiers;
  // The GEMM efficiency curve: [flops of one GEMM, achieved / peak] for `curve_dtype`.
  MathDtype curve_dtype = MathDtype::bf16;
  std::vector<EfficiencyPoint> gemm_curve;
  std::vector<Straggler> stragglers;
  const TierFit* find(Tier t) const;
};
/// `peak` is the GPU's dense peak per data type; GEMMs measured on a CPU give no curve.
FitResult fit_results(const Results& results, const GpuSpec& gpu);

// ---- the calibrated profile ----------------------------------------------------------------

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

/// The calibrated cluster profile (loads through load_cluster): preset figures replaced by
/// measured ones, raw measurements, fit and provenance.
nlohmann::json build_profile(const Results& results, const FitResult& fit,
                             const ProfileInputs& inputs);

/// The '#' lines that close the table: fitted figures per tier, the GEMM verdict, stragglers.
std::string render_summary(const Results& results, const FitResult& fit, const GpuSpec& gpu);

/// What the user must know before trusting the profile: fits whose residual passes
/// kResidualWarning, and tiers that were not measured (the profile takes a preset's link for
/// them). One sentence each, without a prefix.
std::vector<std::string> probe_warnings(const Results& results, const FitResult& fit);

/// The GPU preset whose name matches a device name ("NVIDIA H100 80GB HBM3" -> "H100-SXM"),
/// or "" when none does.
std::string gpu_preset_for_device(const std::string& device);

// ---- back-ends ------------------------------------------------------------------------------

/// The back-ends compiled into this binary ("nccl", "mpi").
std::vector<std::string> built_backends();

struct Launch {
  std::unique_ptr<Control> control;
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<Backend> backend;
  std::string note;  // why `auto` picked what it picked
};
/// Starts `name` (auto | nccl | mpi). InputError (exit 2) when it is not built or cannot run
/// here: no CUDA driver, no GPU, NCCL missing. `auto` takes nccl when a GPU is usable.
Launch start_backend(const std::string& name, const Settings& settings);

}  // namespace shardplan::probe
