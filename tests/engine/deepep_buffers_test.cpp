// DeepEP's communication buffers and the EP group sizes it runs, against DeepEP's own sizing
// (csrc/config.hpp Config::get_nvl_buffer_size_hint / get_rdma_buffer_size_hint, deep_ep/
// buffer.py get_dispatch_config / get_combine_config) as Megatron-Core's fused_a2a.py get_buffer
// calls it. Every expected figure is the formula worked through by hand here.
#include <doctest/doctest.h>

#include <algorithm>

#include "shardplan/memory.hpp"
#include "shardplan/moe.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/rules.hpp"
#include "shardplan/search.hpp"
#include "shardplan/units.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

// Per token slot beside the hidden bytes: SourceMeta (2 ints), 128 int64 top-k indices, 128
// fp32 top-k weights, 128 fp32 scales.
constexpr double kMeta = 8 + 128 * 8 + 128 * 4 + 128 * 4;

bool breaks(const ModelSpec& m, const TrainingSpec& t, const ParallelPlan& p,
            const ClusterSpec& c, RuleId id) {
  for (const RuleProblem& r : check_plan(m, t, p, c, {}))
    if (r.rule == id) return true;
  return false;
}

}  // namespace

TEST_CASE("DeepSeek-V3 at EP 64: DeepEP's NVLink 377.7 MB and RDMA 367.6 MB per GPU") {
  // hidden 7168 in bf16: 14,336 hidden bytes. 20 SMs = 10 channels; 64 ranks = 8 RDMA ranks of
  // 8 NVLink peers. EP 64's dispatch config is (20, 288, 28, 128) and combine (1, 288, 20, 128):
  // both receive 288 NVLink tokens; the RDMA receive chunk 128 rounds up to a multiple of the
  // send chunk, 140 for 28 and for 20.
  const double hidden_bytes = 7168.0 * 2;
  const double nvl_hint = 10.0 * 8 * (2 * 8 + 3) * 4 + 10.0 * 8 * 288 * (hidden_bytes + kMeta);
  const double rdma =
      10.0 * 8 * (8 * 2 + 2) * 2 * 4 + 10.0 * 8 * 140 * (hidden_bytes + kMeta + 16) * 2;
  CHECK(nvl_hint == 377677760.0);
  const double nvl = 377677824.0;  // rounded up to a multiple of 128 bytes
  CHECK(rdma == 367550720.0);      // already one
  const DeepEpBuffers b = deepep_buffers(64, hidden_bytes);
  CHECK(b.nvl_bytes == doctest::Approx(nvl));
  CHECK(b.rdma_bytes == doctest::Approx(rdma));
  CHECK(b.total() / kGiB == doctest::Approx(0.694).epsilon(0.002));

  // Inside one NVLink group (EP 8) there is no RDMA buffer, and one RDMA rank's counters.
  const DeepEpBuffers inside = deepep_buffers(8, hidden_bytes);
  CHECK(inside.rdma_bytes == 0);
  CHECK(10.0 * 8 * (2 * 1 + 3) * 4 + 10.0 * 8 * 256 * (hidden_bytes + kMeta) == 335709760.0);
  CHECK(inside.nvl_bytes == 335709824.0);  // the next multiple of 128
  // A group DeepEP has no config for has no buffers (the rule refuses it).
  CHECK(deepep_buffers(48, hidden_bytes).total() == 0);
}

TEST_CASE("the memory table carries DeepEP's buffers under --moe-dispatcher deepep only") {
  const ModelSpec m = load_model("deepseek-v3");
  const ClusterSpec c = test::cluster(2048, "h800-deepseek");
  TrainingSpec t = test::training(4096, 15360);
  t.framework = load_framework(Framework::megatron);
  ParallelPlan p = test::plan(128, 1, 16);
  p.ep = 64;
  p.zero = 1;
  const MemoryBreakdown plain = estimate_memory(m, t, p, c);
  CHECK(plain.worst().ep_buffer_bytes == 0);
  t.moe_dispatcher = MoeDispatcher::deepep;
  const MemoryBreakdown deepep = estimate_memory(m, t, p, c);
  const double buffers = deepep_buffers(64, 7168.0 * 2).total();
  for (size_t s = 0; s < deepep.stages.size(); ++s) {
    CHECK(deepep.stages[s].ep_buffer_bytes == doctest::Approx(buffers));
    CHECK(deepep.stages[s].total_bytes() ==
          doctest::Approx(plain.stages[s].total_bytes() + buffers));
  }
  // fp8 dispatch still sizes the buffers for 2 bytes per element (fused_a2a.py get_hidden_bytes).
  t.moe_fp8_dispatch = true;
  CHECK(estimate_memory(m, t, p, c).worst().ep_buffer_bytes == doctest::Approx(buffers));
  // No expert parallelism: no DeepEP buffers.
  p.ep = 1;
  CHECK(estimate_memory(m, t, p, c).worst().ep_buffer_bytes == 0);
}

TEST_CASE("DeepEP runs EP groups of 2, 4, 8, 16, 24, 32, 64, 128, 144 and 160 GPUs only") {
  CHECK(deepep_group_sizes() == std::vector<int>{2, 4, 8, 16, 24, 32, 64, 128, 144, 160});
  const ModelSpec m = load_model("deepseek-v3");
  const ClusterSpec c = test::cluster(2048, "h800-deepseek");
  TrainingSpec t = test::training(4096, 15360);
  t.framework = load_framework(Framework::megatron);
  t.moe_dispatcher = MoeDispatcher::deepep;
  ParallelPlan p = test::plan(128, 1, 16);
  p.ep = 64;
  CHECK_FALSE(breaks(m, t, p, c, RuleId::deepep_group_size));
  p.ep = 48;
  CHECK(breaks(m, t, p, c, RuleId::deepep_group_size));
  p.ep = 32;  // with expert tp 2 the flex dispatcher's group is 64 GPUs
  p.etp = 2;
  CHECK_FALSE(breaks(m, t, p, c, RuleId::deepep_group_size));
  p.etp = 8;  // 256
  CHECK(breaks(m, t, p, c, RuleId::deepep_group_size));
  t.moe_dispatcher = MoeDispatcher::alltoall;  // the plain all-to-all runs any group
  CHECK_FALSE(breaks(m, t, p, c, RuleId::deepep_group_size));
}

TEST_CASE("the search proposes no DeepEP plan with an expert group DeepEP cannot run") {
  // Qwen3-235B-A22B on 256 B200s at tp 2: ep 64 makes a group of 128 (runs), ep 128 one of 256.
  const ModelSpec m = load_model("qwen3-235b-a22b");
  const ClusterSpec c = test::cluster(256, "dgx-b200");
  TrainingSpec t = test::training(4096, 256);
  t.framework = load_framework(Framework::megatron);
  t.moe_dispatcher = MoeDispatcher::deepep;
  SearchSpace space;
  space.tp = {2};
  space.pp = {1};
  space.cp = {1};
  space.ep = {64, 128};
  space.zero = {1};
  space.micro_batch = {1};
  space.interleave = {1};
  space.recompute = {Recompute::full};
  space.sequence_parallel = {true};
  space.schedule = {Schedule::one_f_one_b};
  space.lighter_ends = {false};
  SearchOptions o;
  o.threads = 1;
  const SearchResult r = search(m, t, c, space, o);
  CHECK(r.rejected[static_cast<size_t>(RuleId::deepep_group_size)] == 1);
  REQUIRE(!r.ranked.empty());
  for (const Candidate& x : r.ranked) CHECK(deepep_runs_group(x.plan.ep * x.plan.expert_tp()));
}
