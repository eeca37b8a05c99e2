// nccl-tests' definitions (doc/PERFORMANCE.md) and the time of a collective on a placement.
#include "shardplan/collectives.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "shardplan/error.hpp"

namespace shardplan {
namespace {

double ring_all_reduce(int n) {
  return 2.0 * (n - 1) / n;
}
double ring_gather(int n) {
  return static_cast<double>(n - 1) / n;
}
double one(int) {
  return 1.0;
}
double steps_all_reduce(int n) {
  return 2.0 * (n - 1);
}
double steps_ring(int n) {
  return n - 1.0;
}
double steps_one(int) {
  return 1.0;
}

constexpr std::array<CollectiveInfo, kCollectives> kTable = {{
    {Collective::all_reduce, "all_reduce", "all_reduce_perf", ring_all_reduce, steps_all_reduce,
     "the buffer every rank holds"},
    {Collective::all_gather, "all_gather", "all_gather_perf", ring_gather, steps_ring,
     "the gathered output (n x each rank's input)"},
    {Collective::reduce_scatter, "reduce_scatter", "reduce_scatter_perf", ring_gather, steps_ring,
     "the input each rank reduces (n x its output)"},
    {Collective::broadcast, "broadcast", "broadcast_perf", one, steps_ring, "the broadcast buffer"},
    {Collective::all_to_all, "all_to_all", "alltoall_perf", ring_gather, steps_ring,
     "each rank's send buffer (n chunks)"},
    {Collective::send_recv, "send_recv", "sendrecv_perf", one, steps_one, "one message"},
}};

}  // namespace

std::span<const CollectiveInfo> collectives() {
  return kTable;
}

const CollectiveInfo& info(Collective c) {
  return kTable[static_cast<size_t>(c)];
}

Collective parse_collective(const char* name, const char* field) {
  for (const auto& c : kTable) {
    if (std::strcmp(c.name, name) == 0) return c.kind;
  }
  throw InputError(field, std::string("'") + name +
                              "' is not a collective; use all_reduce, all_gather, reduce_scatter, "
                              "broadcast, all_to_all or send_recv");
}

double algbw(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds : 0;
}

double busbw(Collective c, int ranks, double bytes, double seconds) {
  return algbw(bytes, seconds) * info(c).bus_factor(ranks);
}

namespace {

double tier_busbw(const LinkSpec& link, Collective c) {
  const double measured = link.collective_busbw[static_cast<size_t>(c)];
  return measured > 0 ? measured : link.busbw_bytes_per_s;
}

}  // namespace

double placement_busbw(Collective c, const Placement& g, const ClusterSpec& cluster) {
  const double intra = tier_busbw(cluster.intra, c);
  if (g.domains() <= 1) return intra;
  const double nics = g.ranks_per_domain * tier_busbw(cluster.inter, c);
  return g.ranks_per_domain > 1 ? std::min(intra, nics) : nics;
}

double collective_time(Collective c, double bytes, const Placement& g, const ClusterSpec& cluster) {
  if (g.ranks <= 1 || bytes <= 0) return 0;
  const bool crosses = g.domains() > 1;
  const double latency = (crosses ? cluster.inter.latency_s : cluster.intra.latency_s) *
                         info(c).latency_steps(g.ranks);
  if (c == Collective::all_to_all && crosses) {
    const double n = g.ranks, k = g.ranks_per_domain;
    return all_to_all_time((k - 1) / n * bytes, (n - k) / n * bytes, g, cluster);
  }
  if (c == Collective::send_recv) {
    return latency +
           bytes / (crosses ? tier_busbw(cluster.inter, c) : tier_busbw(cluster.intra, c));
  }
  return latency + bytes * info(c).bus_factor(g.ranks) / placement_busbw(c, g, cluster);
}

double all_to_all_time(double inside_bytes, double across_bytes, const Placement& g,
                       const ClusterSpec& cluster) {
  if (g.ranks <= 1 || inside_bytes + across_bytes <= 0) return 0;
  const Collective c = Collective::all_to_all;
  const bool crosses = g.domains() > 1;
  const double latency =
      (crosses ? cluster.inter.latency_s : cluster.intra.latency_s) * info(c).latency_steps(g.ranks);
  const double across = crosses ? across_bytes / tier_busbw(cluster.inter, c) : 0.0;
  const double inside = inside_bytes / tier_busbw(cluster.intra, c);
  return latency + std::max(across, inside);
}

}  // namespace shardplan
