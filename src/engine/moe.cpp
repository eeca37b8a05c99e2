// Expert-parallel traffic as MoE frameworks run it: the plain all-to-all dispatcher, DeepEP's
// hierarchical one with node-limited routing, fp8 dispatch, and the all-to-alls that
// DualPipe-style F&B pairs hide.
#include "shardplan/moe.hpp"

#include <algorithm>
#include <cmath>

namespace shardplan {

double dispatch_element_bytes(const TrainingSpec& training) {
  // DeepSeek-V3 report Sec. 3.3: activations before the MoE up projections are quantised to
  // fp8 in 1x128 tiles, each with its own fp32 scale, and dispatched so; combine stays bf16.
  return training.moe_fp8_dispatch ? 1.0 + 4.0 / 128.0 : training.recipe.activation_bytes;
}

namespace {

// Domains a token may reach: a router that picks `group_topk` of `groups` expert groups sends
// each token to at most the domains those groups live on (DeepSeek-V3 Sec. 3.2.2: "each token
// will be sent to at most M = 4 nodes", with its 8 groups mapped to the 8 nodes of EP 64).
int domain_limit(const ModelSpec& m, int domains) {
  const RouterSpec& r = m.router;
  int limit = std::min(domains, m.experts_per_token);
  if (r.groups > 0 && r.group_topk > 0 && r.group_topk < r.groups) {
    const int domains_per_group = std::max(1, domains / r.groups);
    limit = std::min(limit, r.group_topk * domains_per_group);
  }
  return limit;
}

// Expected distinct domains other than its own that a token's k experts fall on, the experts
// spread evenly over d domains and at most `limit` of them reachable.
double remote_domains(int k, int d, int limit) {
  if (d <= 1) return 0;
  const double dd = d;
  const double distinct = dd * (1.0 - std::pow(1.0 - 1.0 / dd, k));
  return (dd - 1.0) / dd * std::min<double>(limit, distinct);
}

}  // namespace

ExpertTraffic expert_traffic(const ModelSpec& m, const TrainingSpec& tr, const Placement& g,
                             const ClusterSpec& c, double tokens, double visits) {
  ExpertTraffic t;
  const double h = m.hidden;
  const double de = dispatch_element_bytes(tr), ce = tr.recipe.activation_bytes;
  t.dispatch_bytes = visits * h * de;
  t.combine_bytes = visits * h * ce;
  const int domains = g.domains();
  const bool hierarchical = tr.moe_dispatcher == MoeDispatcher::deepep && domains > 1;
  if (!hierarchical) {
    t.dispatch_s = collective_time(Collective::all_to_all, t.dispatch_bytes, g, c);
    t.combine_s = collective_time(Collective::all_to_all, t.combine_bytes, g, c);
    if (domains > 1) {
      t.remote_copies_per_token = (g.ranks - g.ranks_per_domain) /
                                  static_cast<double>(g.ranks) * visits / std::max(1.0, tokens);
    }
    return t;
  }
  // DeepEP internode: each token crosses once per remote domain holding one of its experts
  // (RDMA to the same local rank there), then NVLink forwards it to the GPUs of its experts;
  // combine reduces inside the domain first and returns one copy the same way.
  t.domain_limit = domain_limit(m, domains);
  t.remote_copies_per_token = remote_domains(m.experts_per_token, domains, t.domain_limit);
  const double load = visits / std::max(1.0, tokens * m.experts_per_token);  // capacity / max-load
  const double across = tokens * load * t.remote_copies_per_token * h;
  const double k = g.ranks_per_domain;
  const double inside = visits * h * (k - 1.0) / k;
  t.dispatch_s = all_to_all_time(inside * de, across * de, g, c);
  t.combine_s = all_to_all_time(inside * ce, across * ce, g, c);
  return t;
}

bool overlaps_all_to_all(const ParallelPlan& p) {
  return p.moe_a2a_overlap;
}

double paired_share(const ParallelPlan& p, int micro_batches) {
  if (!overlaps_all_to_all(p) || micro_batches <= 0) return 0;
  const int alone = std::max(1, p.pp - 1);  // stage 0's warm-up forwards (one with no pipeline)
  return std::max(0, micro_batches - alone) / static_cast<double>(micro_batches);
}

double exposed_all_to_all_s(const ParallelPlan& p, int micro_batches, double ep_s,
                            double compute_s) {
  const double f = paired_share(p, micro_batches);
  return (1.0 - f) * ep_s + f * std::max(0.0, ep_s - compute_s);
}

}  // namespace shardplan
