// Expert-parallel traffic as MoE frameworks run it: the plain all-to-all dispatcher, DeepEP's
// hierarchical one with node-limited routing, fp8 dispatch, and the all-to-alls that
// DualPipe-style F&B pairs hide.
#include "shardplan/moe.hpp"

#include <algorithm>
#include <array>
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

namespace {

// DeepEP's normal-kernel configs, deep_ep/buffer.py Buffer.get_dispatch_config /
// get_combine_config (deepseek-ai/DeepEP branch hybrid-ep at 94a9f8f6, the branch Megatron-LM's
// docker/Dockerfile.ci.lts installs): Config(num_sms, nvl_send, nvl_recv, rdma_send, rdma_recv)
// per EP group size; the sizes only enter the buffers through the receive chunks. DeepEP's main
// branch added EP 48 and 96 (#421, Sep 2025) but not this branch; 2-8 stay inside NVLink.
struct DeepEpConfig {
  int ranks;
  int nvl_recv_tokens;
  int rdma_send_tokens;
  int rdma_recv_tokens;
};
constexpr std::array<DeepEpConfig, 10> kDeepEpDispatch = {{{2, 256, 6, 128},
                                                           {4, 256, 6, 128},
                                                           {8, 256, 6, 128},
                                                           {16, 288, 20, 128},
                                                           {24, 288, 32, 128},
                                                           {32, 288, 32, 128},
                                                           {64, 288, 28, 128},
                                                           {128, 560, 32, 128},
                                                           {144, 720, 12, 128},
                                                           {160, 720, 12, 128}}};
constexpr std::array<DeepEpConfig, 10> kDeepEpCombine = {{{2, 256, 6, 128},
                                                          {4, 256, 6, 128},
                                                          {8, 256, 6, 128},
                                                          {16, 288, 12, 128},
                                                          {24, 288, 8, 128},
                                                          {32, 288, 8, 128},
                                                          {64, 288, 20, 128},
                                                          {128, 560, 12, 128},
                                                          {144, 720, 8, 128},
                                                          {160, 720, 8, 128}}};

// csrc/kernels/configs.cuh: NUM_MAX_NVL_PEERS 8; per token beside its hidden bytes DeepEP
// reserves its SourceMeta (two ints, csrc/kernels/internode.cu get_source_meta_bytes), kNumMaxTopK
// = 128 int64 expert indices and 128 fp32 weights, and kNumMaxScales = 128 fp32 scales.
constexpr double kNvlPeers = 8;
constexpr double kTokenMetaBytes = 8 + 128 * 8 + 128 * 4 + 128 * 4;

double align_up(double bytes, double to) {
  return std::ceil(bytes / to) * to;
}

// csrc/config.hpp Config::get_nvl_buffer_size_hint: per channel (num_sms / 2) and NVLink peer,
// the channel's head/tail counters and num_max_nvl_chunked_recv_tokens token slots.
double nvl_hint(const DeepEpConfig& c, double hidden_bytes, int ranks, int num_sms) {
  const int channels = num_sms / 2;  // DeepEP's num_channels, an int division
  const double rdma_ranks = std::max(1.0, ranks / kNvlPeers);
  const double nvl_ranks = std::min<double>(ranks, kNvlPeers);
  double bytes = channels * nvl_ranks * (2.0 * rdma_ranks + 3.0) * 4.0;
  bytes += channels * nvl_ranks * c.nvl_recv_tokens * (hidden_bytes + kTokenMetaBytes);
  return align_up(bytes, 128);
}

// Config::get_rdma_buffer_size_hint: none inside one NVLink group; else per channel and RDMA
// rank a send and a receive ring (x 2) of num_max_rdma_chunked_recv_tokens slots, rounded up to
// a multiple of the send chunk by Config's constructor, each slot also holding an int4.
double rdma_hint(const DeepEpConfig& c, double hidden_bytes, int ranks, int num_sms) {
  if (ranks <= kNvlPeers) return 0;
  const int channels = num_sms / 2;  // DeepEP's num_channels, an int division
  const double rdma_ranks = ranks / kNvlPeers;
  const double slots = align_up(c.rdma_recv_tokens, c.rdma_send_tokens);
  double bytes = channels * rdma_ranks * (kNvlPeers * 2 + 2) * 2 * 4.0;
  bytes += channels * rdma_ranks * slots * (hidden_bytes + kTokenMetaBytes + 16.0) * 2;
  return align_up(bytes, 128);
}

template <size_t N>
const DeepEpConfig* find_config(const std::array<DeepEpConfig, N>& table, int ranks) {
  for (const DeepEpConfig& c : table)
    if (c.ranks == ranks) return &c;
  return nullptr;
}

}  // namespace

const std::vector<int>& deepep_group_sizes() {
  static const std::vector<int> sizes = [] {
    std::vector<int> out;
    out.reserve(kDeepEpDispatch.size());
    for (const DeepEpConfig& c : kDeepEpDispatch) out.push_back(c.ranks);
    return out;
  }();
  return sizes;
}

bool deepep_runs_group(int ranks) {
  return find_config(kDeepEpDispatch, ranks) != nullptr;
}

DeepEpBuffers deepep_buffers(int ranks, double hidden_bytes, int num_sms) {
  DeepEpBuffers b;
  const DeepEpConfig* dispatch = find_config(kDeepEpDispatch, ranks);
  const DeepEpConfig* combine = find_config(kDeepEpCombine, ranks);
  if (dispatch == nullptr || combine == nullptr) return b;
  // megatron/core/transformer/moe/fused_a2a.py get_buffer: the max of both configs' hints.
  b.nvl_bytes = std::max(nvl_hint(*dispatch, hidden_bytes, ranks, num_sms),
                         nvl_hint(*combine, hidden_bytes, ranks, num_sms));
  b.rdma_bytes = std::max(rdma_hint(*dispatch, hidden_bytes, ranks, num_sms),
                          rdma_hint(*combine, hidden_bytes, ranks, num_sms));
  return b;
}

double ep_buffer_bytes(const ModelSpec& m, const TrainingSpec& tr, const ParallelPlan& p) {
  if (tr.moe_dispatcher != MoeDispatcher::deepep || !m.is_moe()) return 0;
  // The flex dispatcher's group is expert TP x EP (token_dispatcher.py _DeepepManager).
  const int ranks = p.ep * p.expert_tp();
  if (p.ep <= 1) return 0;
  // fused_a2a.py get_hidden_bytes: hidden x max(element size, 2), so an fp8 dispatch still
  // sizes its buffers for 2 bytes per element.
  const double hidden_bytes = m.hidden * std::max(2.0, tr.recipe.activation_bytes);
  return deepep_buffers(ranks, hidden_bytes).total();
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
