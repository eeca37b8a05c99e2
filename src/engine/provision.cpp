// provision: the planner run once per (GPU type, count), each option priced, the Pareto
// frontier of time to train vs cost marked and the best option under the constraints picked.
#include "shardplan/provision.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <tuple>

#include "shardplan/error.hpp"
#include "shardplan/parallel.hpp"

namespace shardplan {
namespace {

// One (offer, count) planned as `plan` plans it, the fastest plan priced.
ProvisionOption plan_option(const ModelSpec& model, const TrainingSpec& base, const GpuOffer& offer,
                            int count, const ProvisionRequest& request) {
  ProvisionOption o;
  o.gpu = offer.cluster.gpu.name;
  o.gpus = count;
  o.cluster = offer.cluster;
  o.cluster.gpus = count;
  o.training = base;
  // The same run on every option: the default batch is a fixed token count per step
  // (default_global_batch), whatever the GPU count.
  if (o.training.global_batch == 0) o.training.global_batch = default_global_batch(base.seq_len);
  o.training.gpu_hour_cost = offer.gpu_hour_cost;
  const PlanningResult planned = plan_cluster(model, o.training, o.cluster, request.planning);
  if (const RungVerdict* rec = planned.recommended()) {
    o.has_recommended = true;
    o.recommended = rec->plan.plan;
    o.recommended_rung = rec->rung;
    o.recommended_step_s = rec->plan.step_s;
  }
  const Candidate* fastest = planned.fastest();
  if (!fastest) return o;
  o.fits = true;
  o.plan = fastest->plan;
  // Where a framework profile and the step-time interval join: the framework's rules and
  // overheads shape the search above (request.planning) and this estimate, here and only here.
  // plan_cluster estimated the fastest plan already (estimate_shown): not simulated twice.
  SHARDPLAN_CHECK(planned.fastest_estimate.has_value(), "plan_cluster estimates its fastest plan");
  o.estimate = *planned.fastest_estimate;
  o.headroom_bytes = o.estimate.memory.margin_bytes();
  return o;
}

bool dominates(const ProvisionOption& a, const ProvisionOption& b) {
  const bool no_worse = a.time_to_train_s() <= b.time_to_train_s() && a.cost() <= b.cost();
  const bool better = a.time_to_train_s() < b.time_to_train_s() || a.cost() < b.cost();
  return no_worse && better;
}

// Sort key: options that fit first, then the objective, then the other figure, then the GPU
// name and count so that the order never depends on the input order.
auto sort_key(const ProvisionOption& o, ProvisionObjective objective) {
  const double first = objective == ProvisionObjective::cost ? o.cost() : o.time_to_train_s();
  const double second = objective == ProvisionObjective::cost ? o.time_to_train_s() : o.cost();
  return std::make_tuple(!o.fits, first, second, o.gpu, o.gpus);
}

std::optional<size_t> best_by(const std::vector<ProvisionOption>& options, bool constrained,
                              double (ProvisionOption::*figure)() const) {
  std::optional<size_t> best;
  for (size_t i = 0; i < options.size(); ++i) {
    const ProvisionOption& o = options[i];
    if (!o.fits || (constrained && !(o.meets_deadline && o.within_budget))) continue;
    if (!best || (o.*figure)() < (options[*best].*figure)()) best = i;
  }
  return best;
}

}  // namespace

const char* to_string(ProvisionObjective o) {
  return o == ProvisionObjective::cost ? "cost" : "time";
}

void mark_pareto(std::vector<ProvisionOption>& options) {
  for (ProvisionOption& o : options) {
    o.pareto = o.fits && std::none_of(options.begin(), options.end(), [&](const auto& other) {
                 return other.fits && dominates(other, o);
               });
  }
}

ProvisionResult provision(const ModelSpec& model, const TrainingSpec& training,
                          const ProvisionRequest& request) {
  SHARDPLAN_CHECK(training.tokens > 0, "provision needs a token budget");
  SHARDPLAN_CHECK(
      !request.counts.empty() && std::is_sorted(request.counts.begin(), request.counts.end()),
      "GPU counts ascending");
  const auto start = std::chrono::steady_clock::now();
  ProvisionResult r;
  const size_t counts = request.counts.size();
  const size_t total = request.offers.size() * counts;
  // The options are independent: with at least as many as threads they run side by side, one
  // thread each; a smaller grid runs them in turn with the threads inside each search. Each
  // goes into its own slot, so the answer is the same on any number of threads.
  const bool side_by_side =
      total >= static_cast<size_t>(thread_count(request.planning.search.threads));
  ProvisionRequest each = request;
  if (side_by_side) each.planning.search.threads = 1;
  r.options.resize(total);
  std::mutex progress;
  size_t done = 0;
  parallel_for(total, side_by_side ? request.planning.search.threads : 1, [&](size_t, size_t i) {
    r.options[i] =
        plan_option(model, training, request.offers[i / counts], request.counts[i % counts], each);
    if (request.on_progress) {
      const std::lock_guard<std::mutex> lock(progress);
      request.on_progress(++done, total);
    }
  });
  for (ProvisionOption& o : r.options) {
    o.meets_deadline =
        request.deadline_s <= 0 || (o.fits && o.time_to_train_s() <= request.deadline_s);
    o.within_budget = request.budget <= 0 || (o.fits && o.cost() <= request.budget);
  }
  mark_pareto(r.options);
  std::stable_sort(r.options.begin(), r.options.end(), [&](const auto& a, const auto& b) {
    return sort_key(a, request.objective) < sort_key(b, request.objective);
  });
  const auto figure = request.objective == ProvisionObjective::cost
                          ? &ProvisionOption::cost
                          : &ProvisionOption::time_to_train_s;
  r.best = best_by(r.options, true, figure);
  r.fastest = best_by(r.options, false, &ProvisionOption::time_to_train_s);
  r.cheapest = best_by(r.options, false, &ProvisionOption::cost);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace shardplan
