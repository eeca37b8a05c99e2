// The consistency layer: on random plans of every framework, every collective row's exposed
// time stays within its time, the rows add up to the step's exposed communication and the
// step to its parts; and DeepSpeed's ZeRO-3 inside one node is priced as DeepSpeed runs it.
#include "shardplan/consistency.hpp"

#include <doctest/doctest.h>

#include <random>

#include "shardplan/framework.hpp"
#include "shardplan/plan.hpp"
#include "shardplan/rules.hpp"
#include "support.hpp"

using namespace shardplan;

TEST_CASE("every estimate keeps its invariants on 4,000 random plans of every framework") {
  std::mt19937 rng(20260321);
  const std::vector<std::string> models = {"llama-2-7b", "llama-2-70b", "mixtral-8x7b",
                                           "gpt3-175b"};
  const std::vector<int> degrees = {1, 2, 4, 8};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  int checked[kFrameworks] = {};
  for (int i = 0; i < 4000; ++i) {
    const ModelSpec m = load_model(pick(models));
    TrainingSpec tr = test::training(pick(std::vector<int>{2048, 4096}),
                                     pick(std::vector<int>{16, 64, 512}));
    const auto fw = static_cast<Framework>(rng() % kFrameworks);
    tr.framework = load_framework(fw);
    tr.overlap_grad_reduce = tr.framework.pricing.overlap_grad_reduce;
    const ClusterSpec c =
        test::cluster(pick(std::vector<int>{8, 64, 512}), rng() % 2 ? "dgx-a100" : "dgx-h100");
    ParallelPlan p;
    p.tp = pick(degrees), p.pp = pick(degrees), p.cp = pick(std::vector<int>{1, 1, 2});
    p.dp = std::max(1, c.gpus / (p.tp * p.pp * p.cp));
    p.ep = pick(std::vector<int>{1, 1, 8});
    p.zero = static_cast<int>(rng() % 4);
    p.micro_batch = pick(std::vector<int>{1, 2});
    p.sequence_parallel = p.tp > 1 && rng() % 2;
    p.recompute = pick(std::vector<Recompute>{Recompute::none, Recompute::selective,
                                              Recompute::full});
    if (p.gpus() != c.gpus) continue;
    const PlanRules rules;
    if (!check_plan(p, {m, tr, c, rules}).empty()) continue;
    const Estimate e = estimate(m, tr, p, c);
    CAPTURE(describe(p));
    CAPTURE(tr.framework.name);
    CAPTURE(m.name);
    for (const Inconsistency& x : inconsistencies(e)) {
      FAIL_CHECK(x.what << ": " << x.value << " against " << x.bound);
    }
    // The communication table's shares are the step table's exposed share, split by row.
    const CommBreakdown& cb = e.comm;
    double shares = 0;
    for (const Traffic* t : {&cb.dp_grads, &cb.dp_params, &cb.tp, &cb.pp, &cb.cp, &cb.ep}) {
      shares += share_of_step(t->exposed_s, e.time);
    }
    CHECK(shares == doctest::Approx(share_of_step(e.time.exposed_comm_s, e.time)));
    checked[static_cast<int>(fw)]++;
  }
  for (int n : checked) CHECK(n > 40);  // every framework has runnable plans among them
}

// Hugging Face's comparison of the two ZeRO-3 implementations on one node (huggingface/blog
// deepspeed-to-fsdp-and-back.md, Table 3: Granite 7B, a Llama-2-7B architecture, on 4 A100s):
// DeepSpeed ZeRO-3 3,094.5 tokens/s per device against FSDP's 3,158.7, MFU 0.40 against 0.41.
// The same plan must not price DeepSpeed at a third of FSDP's speed (the 384-GPU inter-node fit
// of Narayanan et al. 2021 applied to NVLink).
TEST_CASE("DeepSpeed ZeRO-3 inside one node runs near FSDP, as Hugging Face measured") {
  const ModelSpec m = load_model("llama-2-7b");
  const ClusterSpec c = test::cluster(4, "dgx-a100");
  TrainingSpec tr = test::training(4096, 32);
  ParallelPlan p = test::plan(4, 1, 1);
  p.zero = 3;
  p.recompute = Recompute::full;
  tr.framework = load_framework(Framework::deepspeed);
  tr.overlap_grad_reduce = tr.framework.pricing.overlap_grad_reduce;
  const Estimate ds = estimate(m, tr, p, c);
  tr.framework = load_framework(Framework::fsdp);
  tr.overlap_grad_reduce = tr.framework.pricing.overlap_grad_reduce;
  const Estimate fsdp = estimate(m, tr, p, c);
  const double ratio = ds.throughput.tokens_per_s / fsdp.throughput.tokens_per_s;
  CAPTURE(ds.throughput.mfu);
  CAPTURE(fsdp.throughput.mfu);
  CHECK(ratio > 0.85);  // published 3094.5 / 3158.7 = 0.98
  CHECK(ratio < 1.25);  // DeepSpeed's profile runs fused kernels, FSDP's eager ones
  // DeepSpeed's rows price what its step exposes: never more exposed than sent.
  CHECK(ds.comm.dp_params.exposed_s <= ds.comm.dp_params.time_s);
  CHECK(ds.comm.dp_grads.exposed_s <= ds.comm.dp_grads.time_s);
}
