// Topology as tiers: a group is priced on the smallest tier that holds it (the scale-up domain
// or the scale-out network), and "TP inside the NVLink domain" reads the domain, not the host.
#include <doctest/doctest.h>

#include "shardplan/collectives.hpp"
#include "shardplan/comm.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

bool breaks(const ParallelPlan& p, const ClusterSpec& c, RuleId id) {
  const ModelSpec m = load_model("llama-3.1-405b");
  const TrainingSpec t = test::training(8192, 512);
  for (const RuleProblem& r : check_plan(p, {m, t, c, {}})) {
    if (r.rule == id) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("TP 8 on a GB200 NVL72 rack spans two 4-GPU trays but one NVLink domain") {
  const ClusterSpec c = test::cluster(256, "gb200-nvl72");
  const ParallelPlan p = test::plan(32, 8, 1);
  const Placement tp = placement_of(Parallelism::tensor, p, c);
  CHECK(tp.ranks == 8);
  CHECK(tp.hosts() == 2);    // trays of 4 (the launcher's nodes)
  CHECK(tp.domains() == 1);  // one NVLink domain of 72
  // Priced on NVLink: the rack's measured 72-GPU all-reduce (835 GB/s, coreweave/nccl-tests#43)
  // and NVLink5's ring figure (740 GB/s) for reduce-scatter.
  CHECK(placement_busbw(Collective::all_reduce, tp, c) == doctest::Approx(835e9));
  CHECK(placement_busbw(Collective::reduce_scatter, tp, c) == doctest::Approx(740e9));
  // Data parallel at stride 8: 9 members per 72-GPU domain, one per tray.
  const Placement dp = placement_of(Parallelism::data, p, c);
  CHECK(dp.ranks_per_domain == 9);
  CHECK(dp.ranks_per_host == 1);
  // Across domains the 9 members share 9 NICs' worth of ConnectX-7 (47 GB/s busbw each).
  CHECK(placement_busbw(Collective::reduce_scatter, dp, c) == doctest::Approx(9 * 47e9));
}

TEST_CASE("the same TP 8 with the domain cut to a tray is priced over the NICs") {
  ClusterOptions o;
  o.cluster = "gb200-nvl72";
  o.gpus = 256;
  o.gpus_per_domain = 4;  // an NVL4-like tray: NVLink ends at the host
  const ClusterSpec c = build_cluster(o);
  const Placement tp = placement_of(Parallelism::tensor, test::plan(32, 8, 1), c);
  CHECK(tp.domains() == 2);
  // min(NVLink 740, 4 GPUs x 47 GB/s of NIC) = 188 GB/s.
  CHECK(placement_busbw(Collective::reduce_scatter, tp, c) == doctest::Approx(188e9));
}

TEST_CASE("TP within the NVLink domain: 16 is allowed on NVL72, refused on DGX B200") {
  const ParallelPlan p = test::plan(16, 16, 1);
  CHECK_FALSE(breaks(p, test::cluster(256, "gb200-nvl72"), RuleId::tp_within_node));
  CHECK(breaks(p, test::cluster(256, "dgx-b200"), RuleId::tp_within_node));
  CHECK(breaks(test::plan(2, 128, 1), test::cluster(256, "gb200-nvl72"), RuleId::tp_within_node));
}

TEST_CASE("8-GPU servers keep one tier: every group's domain placement is its node placement") {
  for (const char* preset : {"dgx-a100", "dgx-h100", "dgx-b200", "dgx-b300", "mi355x-ubb8"}) {
    const ClusterSpec c = test::cluster(64, preset);
    CHECK_FALSE(c.rack_scale());
    ParallelPlan p = test::plan(4, 4, 4);
    p.cp = 1;
    for (const Parallelism which : {Parallelism::data, Parallelism::tensor, Parallelism::pipeline}) {
      const Placement g = placement_of(which, p, c);
      CHECK(g.ranks_per_domain == g.ranks_per_host);
    }
  }
}
