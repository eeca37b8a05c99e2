// The one table of collectives, shared by the analytic model and the probe: bus factors and
// byte conventions exactly as nccl-tests' doc/PERFORMANCE.md defines them, and the time of a
// collective on a group of GPUs placed on a cluster's tiers.
#pragma once

#include <array>
#include <span>

#include "shardplan/specs.hpp"

namespace shardplan {

enum class Collective { all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send_recv };
inline constexpr int kCollectives = 6;

struct CollectiveInfo {
  Collective kind;
  const char* name;        // "all_reduce", as in JSON and profiles
  const char* nccl_tests;  // the nccl-tests binary that measures it, e.g. "all_reduce_perf"
  /// busbw = algbw * bus_factor(n): 2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter and
  /// all-to-all, 1 broadcast and send/recv (PERFORMANCE.md).
  double (*bus_factor)(int ranks);
  /// Ring steps whose latency adds up: 2(n-1) all-reduce, n-1 gathers/scatters, 1 send/recv.
  double (*latency_steps)(int ranks);
  /// What "size" S means, as nccl-tests prints it.
  const char* size_meaning;
};

std::span<const CollectiveInfo> collectives();
const CollectiveInfo& info(Collective c);
/// InputError naming `field` for an unknown name.
Collective parse_collective(const char* name, const char* field);

/// nccl-tests: algbw = S / t, busbw = algbw * bus factor.
double algbw(double bytes, double seconds);
double busbw(Collective c, int ranks, double bytes, double seconds);

/// Where a communicating group sits: `ranks` GPUs, `ranks_per_domain` of them in each scale-up
/// domain (the tier its traffic is priced on) and `ranks_per_host` in each host (what a
/// launcher and the reports call a node). On 8-GPU servers the two are the same.
struct Placement {
  int ranks = 1;
  int ranks_per_domain = 1;
  int ranks_per_host = 1;
  int domains() const { return (ranks + ranks_per_domain - 1) / ranks_per_domain; }
  int hosts() const { return (ranks + ranks_per_host - 1) / ranks_per_host; }
};

/// The bus bandwidth a collective reaches on this placement. Inside a scale-up domain: the
/// intra tier (NVLink reaches every GPU of an NVL72 rack at the same rate, whichever tray it
/// sits in). Across domains, a ring leaves each domain once per channel and NCCL spreads
/// channels over the NICs, so the group's k GPUs per domain share k GPU-shares of NIC
/// bandwidth: min(intra, k * inter per GPU) (the hierarchical bound; matches nccl-tests on DGX
/// nodes). A measured per-collective figure in the profile wins over the tier's generic one.
double placement_busbw(Collective c, const Placement& g, const ClusterSpec& cluster);

/// Seconds for one collective of S bytes (nccl-tests' size) on the placement:
/// steps x latency + S x bus factor / busbw. All-to-all sends (n-k)/n of S over the NICs and
/// (k-1)/n inside the domain, whichever is slower; send/recv crosses one tier.
double collective_time(Collective c, double bytes, const Placement& g, const ClusterSpec& cluster);

/// Seconds for an all-to-all that moves `inside_bytes` per GPU inside its scale-up domain and
/// `across_bytes` per GPU between domains, both at once: latency + the slower of the two.
/// collective_time's all-to-all is this with the uniform split; a hierarchical dispatcher
/// (DeepEP) sends one copy per token and destination domain across, and forwards inside.
double all_to_all_time(double inside_bytes, double across_bytes, const Placement& g,
                       const ClusterSpec& cluster);

}  // namespace shardplan
