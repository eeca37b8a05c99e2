// What the probe measures and how it checks it (shapes.hpp): the groups of ranks per tier, a
// collective's shape, the data every rank sends and the check of what it receives, and the GEMM
// timing's warm-up and iteration count.
#include "shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>

#include "shardplan/error.hpp"

namespace shardplan::probe {

const char* to_string(Tier t) {
  switch (t) {
    case Tier::intra:
      return "intra";
    case Tier::inter:
      return "inter";
    case Tier::world:
      return "world";
  }
  return "";
}

std::vector<GroupInfo> plan_groups(const std::vector<RankInfo>& ranks) {
  std::map<int, int> per_node;
  for (const RankInfo& r : ranks) ++per_node[r.node];
  const int nodes = static_cast<int>(per_node.size());
  int largest = 0, smallest = 1 << 30;
  for (const auto& [node, count] : per_node) {
    largest = std::max(largest, count);
    smallest = std::min(smallest, count);
  }
  const int total = static_cast<int>(ranks.size());

  GroupInfo intra{Tier::intra, largest, largest, nodes, ""};
  if (largest < 2) intra.skipped = "one rank per node: nothing to measure inside a node";
  if (largest != smallest) {
    intra.skipped = fmt::format(
        "nodes hold {} to {} ranks; the probe needs the same number on "
        "every node",
        smallest, largest);
  }
  GroupInfo inter{Tier::inter, nodes, 1, 1, ""};
  if (nodes < 2) inter.skipped = "a single node: no inter-node link to measure";
  GroupInfo world{Tier::world, total, largest, 1, ""};
  if (nodes < 2) world.skipped = "a single node: the world is the intra tier";
  if (nodes >= 2 && largest == 1) world.skipped = "one rank per node: the world is the inter tier";
  if (nodes >= 2 && largest != smallest) world.skipped = intra.skipped;
  return {intra, inter, world};
}

CollectiveShape shape_of(Collective c, size_t bytes, int ranks) {
  CollectiveShape s;
  s.kind = c;
  s.ranks = std::max(ranks, 1);
  const size_t n = static_cast<size_t>(s.ranks);
  // Buffers that are split into one chunk per rank hold a whole number of elements per rank.
  const bool chunked =
      c == Collective::all_gather || c == Collective::reduce_scatter || c == Collective::all_to_all;
  const size_t unit = sizeof(float) * (chunked ? n : 1);
  s.bytes = bytes / unit * unit;
  const size_t count = s.bytes / sizeof(float);
  s.send_count = s.recv_count = count;
  if (c == Collective::all_gather) s.send_count = count / n;
  if (c == Collective::reduce_scatter) s.recv_count = count / n;
  return s;
}

namespace {

// Rank r's element i: a small integer, so sums over ranks are exact in float.
constexpr size_t kPatternPeriod = 509;
float pattern(size_t rank, size_t index) {
  return static_cast<float>((rank * 131 + index * 7) % kPatternPeriod);
}

// sum over ranks of pattern(q, i), tabulated by i mod the period.
std::vector<float> rank_sums(int ranks) {
  std::vector<float> sums(kPatternPeriod, 0.0f);
  for (size_t i = 0; i < kPatternPeriod; ++i) {
    for (int q = 0; q < ranks; ++q) sums[i] += pattern(q, i);
  }
  return sums;
}

}  // namespace

void fill_send(const CollectiveShape& s, int rank, std::span<float> send) {
  SHARDPLAN_CHECK(send.size() >= s.send_count, "send buffer smaller than the shape");
  size_t v = (static_cast<size_t>(rank) * 131) % kPatternPeriod;
  for (size_t i = 0; i < s.send_count; ++i) {
    send[i] = static_cast<float>(v);
    v += 7;
    if (v >= kPatternPeriod) v -= kPatternPeriod;
  }
}

size_t count_wrong(const CollectiveShape& s, int rank, std::span<const float> recv) {
  SHARDPLAN_CHECK(recv.size() >= s.recv_count, "receive buffer smaller than the shape");
  const int n = s.ranks;
  const size_t r = static_cast<size_t>(rank);
  size_t wrong = 0;
  switch (s.kind) {
    case Collective::all_reduce: {
      const auto sums = rank_sums(n);
      for (size_t i = 0; i < s.recv_count; ++i) wrong += recv[i] != sums[i % kPatternPeriod];
      break;
    }
    case Collective::reduce_scatter: {
      const auto sums = rank_sums(n);
      const size_t offset = r * s.recv_count;
      for (size_t i = 0; i < s.recv_count; ++i) {
        wrong += recv[i] != sums[(offset + i) % kPatternPeriod];
      }
      break;
    }
    case Collective::all_gather: {
      const size_t chunk = s.recv_count / n;
      for (size_t i = 0; i < s.recv_count; ++i) wrong += recv[i] != pattern(i / chunk, i % chunk);
      break;
    }
    case Collective::all_to_all: {
      // Block j of rank r's output is block r of rank j's input.
      const size_t chunk = s.recv_count / n;
      for (size_t i = 0; i < s.recv_count; ++i) {
        wrong += recv[i] != pattern(i / chunk, r * chunk + i % chunk);
      }
      break;
    }
    case Collective::send_recv: {
      // nccl-tests' sendrecv: every rank sends to rank + 1 and receives from rank - 1.
      const size_t from = (r + n - 1) % n;
      for (size_t i = 0; i < s.recv_count; ++i) wrong += recv[i] != pattern(from, i);
      break;
    }
    case Collective::broadcast: {
      for (size_t i = 0; i < s.recv_count; ++i) wrong += recv[i] != pattern(0, i);
      break;
    }
  }
  return wrong;
}

double warm_up(const GemmTiming& t, const std::function<double(int)>& batch) {
  int calls = 0, n = 1;
  double elapsed = 0, per_call = 0;
  for (;;) {
    const double s = batch(n);
    calls += n;
    elapsed += s;
    per_call = s / n;
    if (calls >= t.warmup_iters && elapsed >= t.warmup_s) return per_call;
    // Double while calls are short, but never run past twice the warm-up that is left.
    const double left = std::max(t.warmup_s - elapsed, 0.0);
    const int by_time = per_call > 0 ? static_cast<int>(std::min(2 * left / per_call, 1e6)) : n;
    n = std::max({1, t.warmup_iters - calls, std::min(2 * n, std::max(by_time, 1))});
  }
}

int timed_iterations(const GemmTiming& t, double per_call_s) {
  const double wanted = per_call_s > 0 ? t.budget_s / per_call_s : t.max_iters;
  return static_cast<int>(
      std::clamp(wanted, static_cast<double>(t.min_iters), static_cast<double>(t.max_iters)));
}

}  // namespace shardplan::probe
