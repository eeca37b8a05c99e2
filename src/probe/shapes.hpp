// What the probe measures and how it checks it: the tiers and groups of ranks, a collective's
// shape and data, the GEMM inputs and the points checked, one rank's timings (shapes.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shardplan/collectives.hpp"
#include "shardplan/probe.hpp"

namespace shardplan::probe {

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

/// Seconds of each timed iteration on one rank (nccl-tests averages them per rank, then across
/// ranks), and the elements that failed the correctness check.
struct RankTiming {
  int rank = 0;
  std::vector<double> iteration_s;
  size_t wrong = 0;
  std::string detail;  // the kernel or library call that ran (GEMMs, collectives)
};

/// How a GEMM is timed (the harness sets it, the back-ends follow it): a warm-up of at least
/// `warmup_iters` calls and `warmup_s` seconds (clocks and power settle, the heuristic's kernel
/// is loaded), whose last batch sizes the timed run to `budget_s` within [min_iters, max_iters].
/// Buffers, descriptors and the kernel choice are made once, before the warm-up; every timed
/// call's seconds come back and the harness reports their median.
struct GemmTiming {
  int warmup_iters = 5;
  double warmup_s = 0;
  double budget_s = 1;
  int min_iters = 5;
  int max_iters = 20;
  double debug_delay_s = 0;  // tests (--debug-slow-rank): added to every timed call
};
/// The warm-up: `batch(n)` runs n calls back to back and returns the seconds they took, the
/// device synchronised. Batches double from one call until both bounds of `t` are met; returns
/// the seconds per call of the last batch (what sizes the timed run).
double warm_up(const GemmTiming& t, const std::function<double(int)>& batch);
/// The timed calls for calls of `per_call_s`: budget_s / per_call_s within [min_iters, max_iters].
int timed_iterations(const GemmTiming& t, double per_call_s);

/// Host-memory measurements. h2d / d2h: one pinned host buffer copied to / from device memory
/// (cudaMemcpyAsync on the GPU's own stream), every GPU of the node at once, so the figure is one
/// GPU's share of its host link while all copy, as offload runs. dram_copy / dram_triad:
/// STREAM's Copy (a = b) and Triad (a = b + q c) over arrays much larger than the last-level
/// cache, every rank of a node at once (McCalpin, STREAM, www.cs.virginia.edu/stream/ref.html).
enum class HostMove { h2d, d2h, dram_copy, dram_triad };
const char* to_string(HostMove m);
bool is_link(HostMove m);  // h2d or d2h

struct HostMoveShape {
  HostMove kind = HostMove::h2d;
  size_t array_bytes = 0;  // the copied buffer, or each of the STREAM arrays
  /// Bytes counted per iteration, as STREAM counts them: Copy reads one array and writes one (2),
  /// Triad reads two and writes one (3), ignoring write-allocate traffic; a memcpy moves one.
  double moved_bytes() const;
};

/// STREAM's element value after `iteration` Triads of a = b + q c with b = 2, c = 1 (q = 3, all
/// exact in double): what the check expects in a.
inline constexpr double kTriadExpected = 2.0 + 3.0 * 1.0;
/// The pattern a host copy carries (element i of a buffer of 32-bit words), checked at the far end.
uint32_t host_copy_word(size_t index);

}  // namespace shardplan::probe
