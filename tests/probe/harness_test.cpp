// The harness's definitions: buffer shapes and the data check (against an independent host
// emulation of each collective), busbw as nccl-tests defines it, the tiers a layout measures,
// and a watchdog that ends a wait that never completes.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fork_capture.hpp"

using namespace shardplan;
using namespace shardplan::probe;

namespace {

// What each rank must hold after the collective, computed from every rank's send buffer.
std::vector<std::vector<float>> emulate(const CollectiveShape& s,
                                        const std::vector<std::vector<float>>& send) {
  const int n = s.ranks;
  std::vector<std::vector<float>> recv(n, std::vector<float>(s.recv_count, 0.0f));
  const size_t chunk = s.kind == Collective::all_to_all || s.kind == Collective::all_gather
                           ? s.recv_count / n
                           : s.recv_count;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < s.recv_count; ++i) {
      float& out = recv[r][i];
      switch (s.kind) {
        case Collective::all_reduce:
          for (int q = 0; q < n; ++q) out += send[q][i];
          break;
        case Collective::reduce_scatter:
          for (int q = 0; q < n; ++q) out += send[q][r * s.recv_count + i];
          break;
        case Collective::all_gather:
          out = send[i / chunk][i % chunk];
          break;
        case Collective::all_to_all:
          out = send[i / chunk][r * chunk + i % chunk];
          break;
        case Collective::send_recv:
          out = send[(r + n - 1) % n][i];
          break;
        case Collective::broadcast:
          out = send[0][i];
          break;
      }
    }
  }
  return recv;
}

}  // namespace

TEST_CASE("shapes follow nccl-tests' size conventions") {
  // all_gather: S is the gathered output, each rank sends S/n; reduce_scatter: S is the input.
  const auto ag = shape_of(Collective::all_gather, 1 << 20, 8);
  CHECK(ag.bytes == 1u << 20);
  CHECK(ag.send_count == (1u << 20) / 4 / 8);
  CHECK(ag.recv_count == (1u << 20) / 4);
  const auto rs = shape_of(Collective::reduce_scatter, 1 << 20, 8);
  CHECK(rs.send_count == (1u << 20) / 4);
  CHECK(rs.recv_count == (1u << 20) / 4 / 8);
  // Rounded down to a whole float per rank; too small for one each is no shape.
  CHECK(shape_of(Collective::all_to_all, 100, 3).bytes == 96);
  CHECK(shape_of(Collective::all_gather, 8, 4).bytes == 0);
  CHECK(shape_of(Collective::all_reduce, 8, 4).bytes == 8);
  CHECK(shape_of(Collective::all_reduce, 8, 4).count() == 2);
}

TEST_CASE("busbw = algbw x bus factor, as nccl-tests' PERFORMANCE.md defines it") {
  // 1 GB in 1 s on 8 ranks: algbw 1 GB/s; all-reduce 2(n-1)/n = 1.75, gathers (n-1)/n = 0.875.
  CHECK(algbw(1e9, 1.0) == doctest::Approx(1e9));
  CHECK(busbw(Collective::all_reduce, 8, 1e9, 1.0) == doctest::Approx(1.75e9));
  CHECK(busbw(Collective::all_gather, 8, 1e9, 1.0) == doctest::Approx(0.875e9));
  CHECK(busbw(Collective::reduce_scatter, 8, 1e9, 1.0) == doctest::Approx(0.875e9));
  CHECK(busbw(Collective::all_to_all, 8, 1e9, 1.0) == doctest::Approx(0.875e9));
  CHECK(busbw(Collective::send_recv, 8, 1e9, 1.0) == doctest::Approx(1e9));
  // Two ranks: an all-reduce's bus factor is 1, an all-gather's 1/2.
  CHECK(busbw(Collective::all_reduce, 2, 4e6, 1e-3) == doctest::Approx(4e9));
  CHECK(busbw(Collective::all_gather, 2, 4e6, 1e-3) == doctest::Approx(2e9));
}

TEST_CASE("the check accepts exactly what each collective must produce") {
  for (const CollectiveInfo& c : collectives()) {
    for (int n : {2, 3, 4}) {
      const CollectiveShape s = shape_of(c.kind, 4096 * 3, n);
      CAPTURE(c.name);
      CAPTURE(n);
      std::vector<std::vector<float>> send(n, std::vector<float>(s.send_count));
      for (int r = 0; r < n; ++r) fill_send(s, r, send[r]);
      // Ranks send different data, or a swapped buffer would pass.
      CHECK(send[0] != send[1]);
      auto recv = emulate(s, send);
      for (int r = 0; r < n; ++r) CHECK(count_wrong(s, r, recv[r]) == 0);
      recv[n - 1][s.recv_count / 2] += 1.0f;
      CHECK(count_wrong(s, n - 1, recv[n - 1]) == 1);
      // A buffer the collective never wrote fails everywhere.
      std::vector<float> untouched(s.recv_count, kPoison);
      CHECK(count_wrong(s, 0, untouched) == s.recv_count);
      // Rank 1's output is not rank 0's (where the collective gives ranks different data).
      if (c.kind != Collective::all_reduce && c.kind != Collective::all_gather &&
          c.kind != Collective::broadcast) {
        CHECK(count_wrong(s, 0, recv[1]) > 0);
      }
    }
  }
}

TEST_CASE("tiers: what each layout of ranks measures") {
  auto layout = [](std::vector<int> per_node) {
    std::vector<RankInfo> ranks;
    for (int node = 0; node < static_cast<int>(per_node.size()); ++node) {
      for (int local = 0; local < per_node[node]; ++local) {
        RankInfo r;
        r.rank = r.process = static_cast<int>(ranks.size());
        r.node = node;
        r.local_rank = local;
        ranks.push_back(r);
      }
    }
    return plan_groups(ranks);
  };
  // One node of two (the CI loopback run): intra only.
  auto g = layout({2});
  CHECK(g[0].skipped.empty());
  CHECK(g[0].ranks == 2);
  CHECK(g[1].skipped.find("single node") != std::string::npos);
  CHECK(g[2].skipped.find("intra") != std::string::npos);
  // Two nodes of one (the netns test): inter only.
  g = layout({1, 1});
  CHECK(g[0].skipped.find("one rank per node") != std::string::npos);
  CHECK(g[1].skipped.empty());
  CHECK(g[1].ranks == 2);
  CHECK(g[2].skipped.find("inter") != std::string::npos);
  // Two nodes of four: all three, intra as two groups at once.
  g = layout({4, 4});
  for (const auto& t : g) CHECK(t.skipped.empty());
  CHECK(g[0].groups == 2);
  CHECK(g[0].ranks == 4);
  CHECK(g[1].ranks == 2);
  CHECK(g[2].ranks == 8);
  CHECK(g[2].ranks_per_node == 4);
  // Uneven nodes cannot share one shape.
  g = layout({4, 2});
  CHECK_FALSE(g[0].skipped.empty());
  CHECK(g[1].skipped.empty());
}

TEST_CASE("the watchdog ends a wait that never completes: exit 3 and a report") {
  const test::Forked f = test::run_forked([] {
    auto control = make_local_control();
    Watchdog watchdog(*control, 0.2);
    watchdog.wait([] { return false; }, "a collective that never ends", "dir/backend_x.cpp", 42);
  });
  REQUIRE(f.exited);
  CHECK(f.status == kExitTimeout);
  CHECK(f.err.find("backend_x.cpp:42") != std::string::npos);
  CHECK(f.err.find("a collective that never ends") != std::string::npos);
  CHECK(f.err.find("no progress for 0.2 s") != std::string::npos);
}
