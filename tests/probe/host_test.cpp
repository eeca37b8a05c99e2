// The host-memory measurements: STREAM's kernels and their byte counts, the array size rule, the
// fit from rows (largest copy, the node's Triad) and the profile's `host.measured` read back by
// the planner.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "fit.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"
#include "stream.hpp"

using namespace shardplan;
using namespace shardplan::probe;

namespace {

HostRow host_row(HostMove kind, size_t bytes, double seconds, int ranks, int per_node) {
  HostRow row;
  row.shape = {kind, bytes};
  row.time = {seconds, seconds, seconds, seconds};
  row.rank_bytes_per_s = row.shape.moved_bytes() / seconds;
  row.node_bytes_per_s = per_node * row.rank_bytes_per_s;
  for (int r = 0; r < ranks; ++r) row.rank_s.emplace_back(r, seconds);
  return row;
}

Results two_ranks_one_node() {
  Results r;
  r.backend = "nccl";
  for (int i = 0; i < 2; ++i) {
    RankInfo rank;
    rank.rank = rank.process = rank.local_rank = i;
    rank.host = "node0";
    rank.device = "NVIDIA H100 80GB HBM3";
    r.ranks.push_back(rank);
  }
  r.groups = plan_groups(r.ranks);
  return r;
}

}  // namespace

TEST_CASE("STREAM counts 2 arrays for Copy and 3 for Triad; a copy moves its buffer once") {
  CHECK(HostMoveShape{HostMove::dram_copy, 1000}.moved_bytes() == 2000);
  CHECK(HostMoveShape{HostMove::dram_triad, 1000}.moved_bytes() == 3000);
  CHECK(HostMoveShape{HostMove::h2d, 1000}.moved_bytes() == 1000);
  CHECK(HostMoveShape{HostMove::d2h, 1000}.moved_bytes() == 1000);
}

TEST_CASE("STREAM arrays: 4x the node's last-level cache shared among its ranks, at least 64 MiB") {
  CHECK(stream_array_bytes(0, 1) == kMinStreamArrayBytes);
  CHECK(stream_array_bytes(32ull << 20, 2) == (64ull << 20));
  // Two Xeon 8480C (105 MiB L3 each) shared by 8 ranks: 4 x 210 / 8 = 105 MiB per rank.
  CHECK(stream_array_bytes(2 * (105ull << 20), 8) == (105ull << 20));
  CHECK(stream_array_bytes(1ull << 30, 1) == (4ull << 30));
}

TEST_CASE("run_stream: Triad and Copy leave STREAM's values and time every iteration") {
  for (HostMove kind : {HostMove::dram_triad, HostMove::dram_copy}) {
    int barriers = 0;
    const RankTiming t = run_stream({kind, 1u << 20}, 2, 1, 3, [&] { ++barriers; });
    CHECK(t.wrong == 0);
    CHECK(barriers == 4);  // one before each warm-up and timed iteration
    REQUIRE(t.iteration_s.size() == 3);
    for (double s : t.iteration_s) CHECK(s > 0);
  }
}

TEST_CASE("the host fit takes the largest copy per direction and the node's Triad") {
  Results r = two_ranks_one_node();
  r.host.push_back(host_row(HostMove::h2d, 1u << 20, 1e-4, 2, 2));    // 10.5 GB/s
  r.host.push_back(host_row(HostMove::h2d, 256u << 20, 5e-3, 2, 2));  // 53.7 GB/s
  r.host.push_back(host_row(HostMove::d2h, 256u << 20, 5.5e-3, 2, 2));
  r.host.push_back(host_row(HostMove::dram_copy, 64u << 20, 1e-2, 2, 2));
  r.host.push_back(host_row(HostMove::dram_triad, 64u << 20, 1e-2, 2, 2));
  const HostFit h = fit_host(r);
  CHECK(h.link_bytes == (256u << 20));
  CHECK(h.h2d_bytes_per_s == doctest::Approx((256u << 20) / 5e-3));
  CHECK(h.d2h_bytes_per_s == doctest::Approx((256u << 20) / 5.5e-3));
  CHECK(h.dram_bytes_per_s == doctest::Approx(2 * 3.0 * (64u << 20) / 1e-2));
  CHECK(h.stream_ranks_per_node == 2);
  // A copy that failed its check is no measurement.
  r.host[1].wrong = 1;
  CHECK(fit_host(r).link_bytes == (256u << 20));
  r.host[2].wrong = 1;
  CHECK(fit_host(r).link_bytes == (1u << 20));
}

TEST_CASE("host.measured round-trips through the profile and the planner prices with it") {
  Results r = two_ranks_one_node();
  r.host.push_back(host_row(HostMove::h2d, 256u << 20, 5e-3, 2, 2));
  r.host.push_back(host_row(HostMove::d2h, 256u << 20, 6e-3, 2, 2));
  r.host.push_back(host_row(HostMove::dram_triad, 64u << 20, 1e-2, 2, 2));
  const FitResult fit = fit_results(r, load_gpu("H100-SXM"));
  ProfileInputs in;
  in.gpu = "H100-SXM";
  in.date_utc = "2026-11-30T12:00:00Z";
  const nlohmann::json profile = build_profile(r, fit, in);
  REQUIRE(profile.contains("host"));
  const auto& m = profile.at("host").at("measured");
  CHECK(m.at("sources").size() == 3);
  CHECK(profile.at("measurements").at("host").size() == 3);
  const std::string path = "/tmp/shardplan-host-test-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << profile.dump(2);
  const ClusterSpec c = load_cluster(path);
  std::remove(path.c_str());
  // Rounded to 3 decimals in GB/s; the preset's facts stay beside them.
  CHECK(c.host.measured_h2d_bytes_per_s == doctest::Approx((256u << 20) / 5e-3).epsilon(1e-4));
  CHECK(c.host.measured_d2h_bytes_per_s == doctest::Approx((256u << 20) / 6e-3).epsilon(1e-4));
  CHECK(c.host.measured_dram_bytes_per_s ==
        doctest::Approx(2 * 3.0 * (64u << 20) / 1e-2).epsilon(1e-4));
  CHECK(c.host.link_bytes_per_s == doctest::Approx(63e9));  // pcie5 preset
  CHECK(c.host.known());
  CHECK(c.host.h2d_bytes_per_s() == c.host.measured_h2d_bytes_per_s);
  CHECK(c.host.cpu_adam_dram_bytes_per_s() == c.host.measured_dram_bytes_per_s);
}
