// provision(): every (GPU type, count) planned as plan_cluster plans it, priced, Pareto-marked.
#include "shardplan/provision.hpp"

#include <doctest/doctest.h>

#include "shardplan/profiles.hpp"
#include "support.hpp"

using namespace shardplan;

namespace {

ProvisionOption option(const char* gpu, double days, double cost) {
  ProvisionOption o;
  o.gpu = gpu;
  o.fits = true;
  o.estimate.train_s = days * 86400;
  o.estimate.train_cost = cost;
  return o;
}

GpuOffer offer(const char* gpu, double price) {
  ClusterOptions c;
  c.gpu = gpu;
  return {build_cluster(c), price, "test"};
}

}  // namespace

TEST_CASE("mark_pareto keeps the options nothing beats on both time and cost") {
  std::vector<ProvisionOption> options = {option("fast", 10, 300), option("cheap", 40, 100),
                                          option("dominated", 20, 350), option("middle", 20, 200),
                                          option("tie", 20, 200)};
  options.push_back(option("too big", 0, 0));
  options.back().fits = false;
  mark_pareto(options);
  REQUIRE(options.size() == 6);
  CHECK(options[0].pareto);
  CHECK(options[1].pareto);
  CHECK_FALSE(options[2].pareto);  // "middle" is faster than it and cheaper
  CHECK(options[3].pareto);        // ties in both keep both
  CHECK(options[4].pareto);
  CHECK_FALSE(options[5].pareto);  // does not fit: not an option
}

TEST_CASE("provision prices the plan `plan` would pick, and picks the cheapest in time") {
  const ModelSpec model = load_model("llama-2-7b");
  TrainingSpec tr = test::training(4096, 0);
  tr.tokens = 1e11;
  ProvisionRequest rq;
  rq.offers = {offer("H100-SXM", 3.0), offer("A100-80GB", 1.5)};
  rq.counts = {8, 16};
  rq.planning.search.top_k = 1;
  rq.planning.search.threads = 1;
  rq.deadline_s = 30 * 86400.0;
  const ProvisionResult r = provision(model, tr, rq);
  REQUIRE(r.options.size() == 4);
  for (const ProvisionOption& o : r.options) {
    REQUIRE(o.fits);
    // The same fastest plan plan_cluster finds for this cluster and batch.
    const PlanningResult planned = plan_cluster(model, o.training, o.cluster, rq.planning);
    REQUIRE(planned.fastest());
    CHECK(describe(planned.fastest()->plan) == describe(o.plan));
    // 4M tokens per step at this sequence length, whatever the GPU count (Llama 2 Table 1).
    CHECK(o.training.global_batch == default_global_batch(tr.seq_len));
    CHECK(static_cast<double>(o.training.global_batch) * tr.seq_len ==
          doctest::Approx(kDefaultTokensPerStep).epsilon(0.01));
    // time to train = tokens / tokens per second; cost = GPU-hours x price
    CHECK(o.time_to_train_s() ==
          doctest::Approx(tr.tokens / o.estimate.throughput.tokens_per_s).epsilon(0.01));
    CHECK(o.cost() ==
          doctest::Approx(o.gpus * o.time_to_train_s() / 3600 * o.training.gpu_hour_cost));
    CHECK(o.meets_deadline == (o.time_to_train_s() <= rq.deadline_s));
  }
  REQUIRE(r.best.has_value());
  const ProvisionOption& best = r.options[*r.best];
  CHECK(best.meets_deadline);
  for (const ProvisionOption& o : r.options) {
    if (o.meets_deadline) CHECK(best.cost() <= o.cost());
  }
  REQUIRE(r.fastest.has_value());
  for (const ProvisionOption& o : r.options)
    CHECK(r.options[*r.fastest].time_to_train_s() <= o.time_to_train_s());
}

TEST_CASE("provision answers the same on one thread and on several, progress counted once each") {
  // The options run side by side, each into its own slot (provision.cpp).
  const ModelSpec model = load_model("mixtral-8x7b");
  TrainingSpec tr = test::training(4096, 0);
  tr.tokens = 1e11;
  ProvisionRequest rq;
  rq.offers = {offer("H100-SXM", 3.0), offer("A100-80GB", 1.5)};
  rq.counts = {8, 16, 32};
  rq.planning.search.top_k = 1;
  std::vector<size_t> seen;
  rq.on_progress = [&](size_t done, size_t total) {
    CHECK(total == 6);
    seen.push_back(done);
  };
  rq.planning.search.threads = 1;
  const ProvisionResult one = provision(model, tr, rq);
  seen.clear();
  rq.planning.search.threads = 3;
  const ProvisionResult three = provision(model, tr, rq);
  CHECK(seen == std::vector<size_t>{1, 2, 3, 4, 5, 6});
  REQUIRE(one.options.size() == three.options.size());
  for (size_t i = 0; i < one.options.size(); ++i) {
    const ProvisionOption &a = one.options[i], &b = three.options[i];
    CHECK(a.gpu == b.gpu);
    CHECK(a.gpus == b.gpus);
    CHECK(a.fits == b.fits);
    CHECK(describe(a.plan) == describe(b.plan));
    CHECK(a.time_to_train_s() == b.time_to_train_s());
    CHECK(a.pareto == b.pareto);
  }
  CHECK(one.best == three.best);
  // A grid smaller than the threads runs its options in turn, the threads inside each search:
  // the same answer again.
  rq.offers = {offer("H100-SXM", 3.0)};
  rq.counts = {16};
  rq.planning.search.threads = 8;
  rq.on_progress = nullptr;
  const ProvisionResult single = provision(model, tr, rq);
  REQUIRE(single.options.size() == 1);
  for (const ProvisionOption& o : one.options) {
    if (o.gpu != "H100-SXM" || o.gpus != 16) continue;
    CHECK(describe(single.options[0].plan) == describe(o.plan));
    CHECK(single.options[0].time_to_train_s() == o.time_to_train_s());
  }
}
