// The ladder and the search, run together with one set of rules (see planning.hpp).
#include "shardplan/planning.hpp"

namespace shardplan {

PlanningResult plan_cluster(const ModelSpec& model, const TrainingSpec& training,
                            const ClusterSpec& cluster, const PlanningRequest& request) {
  LadderOptions lo;
  lo.max_comm_share = request.max_comm_share;
  lo.rules = request.search.rules;
  lo.threads = request.search.threads;
  PlanningResult r;
  r.ladder = walk_ladder(model, training, cluster, lo);
  r.space = full_space(model, training, cluster, request.search.rules);
  r.found = search(model, training, cluster, r.space, request.search);
  return r;
}

}  // namespace shardplan
