// The generic harness: the size sweep with warm-up and timed iterations, and min/avg/max across
// ranks (the groups, the data every rank sends and its check are shapes.cpp's). Back-ends only
// move bytes and run GEMMs; every number is defined here, in shapes.cpp and collectives.hpp.
#include "harness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>

#include "sampling.hpp"
#include "shardplan/error.hpp"

namespace shardplan::probe {

size_t Results::wrong() const {
  size_t total = 0;
  for (const auto& r : rows) total += r.wrong;
  for (const auto& g : gemms) total += g.wrong;
  for (const auto& h : host) total += h.wrong;
  for (const auto& p : pairs) total += p.wrong;
  return total;
}

namespace {

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// One process's timings as text for the control plane, and all processes' back.
std::string encode(const std::vector<RankTiming>& timings) {
  nlohmann::json a = nlohmann::json::array();
  for (const RankTiming& t : timings) {
    a.push_back({{"rank", t.rank},
                 {"s", mean(t.iteration_s)},
                 {"median", median(t.iteration_s)},
                 {"wrong", t.wrong},
                 {"detail", t.detail},
                 {"iterations", t.iteration_s.size()},
                 {"ran", !t.iteration_s.empty()}});
  }
  return a.dump();
}

}  // namespace

Gathered gather(Control& control, const std::vector<RankTiming>& mine, const std::string& what) {
  Gathered g;
  double median_sum = 0;
  for (const std::string& text : control.allgather(encode(mine), what)) {
    for (const auto& t : nlohmann::json::parse(text)) {
      g.rank_s.emplace_back(t.at("rank").get<int>(), t.at("s").get<double>());
      median_sum += t.at("median").get<double>();
      g.wrong += t.at("wrong").get<size_t>();
      g.rank_wrong.emplace_back(t.at("rank").get<int>(), t.at("wrong").get<size_t>());
      if (g.detail.empty() || !t.at("ran").get<bool>())
        g.detail = t.at("detail").get<std::string>();
      g.ran = g.ran && t.at("ran").get<bool>();
      const int n = t.at("iterations").get<int>();
      g.iterations = g.iterations == 0 ? n : std::min(g.iterations, n);
    }
  }
  std::sort(g.rank_s.begin(), g.rank_s.end());
  if (!g.rank_s.empty()) {
    g.time.min_s = g.time.max_s = g.rank_s.front().second;
    double sum = 0;
    for (const auto& [rank, s] : g.rank_s) {
      g.time.min_s = std::min(g.time.min_s, s);
      g.time.max_s = std::max(g.time.max_s, s);
      sum += s;
    }
    g.time.avg_s = sum / static_cast<double>(g.rank_s.size());
    g.time.median_s = median_sum / static_cast<double>(g.rank_s.size());
  }
  return g;
}

namespace {

// The harness's state for one run.
class Run {
 public:
  Run(Backend& b, Control& c, Watchdog& w, const SweepPlan& p, Reporter& r)
      : backend_(b), control_(c), watchdog_(w), plan_(p), reporter_(r) {}

  Results go() {
    results_.backend = backend_.name();
    results_.plan = plan_;
    results_.ranks = backend_.ranks();
    results_.groups = plan_groups(results_.ranks);
    results_.libraries = backend_.libraries();
    results_.gemm_on_gpu = backend_.measures_gpu();
    for (Tier t : {Tier::intra, Tier::inter, Tier::world}) {
      results_.link_medium[static_cast<size_t>(t)] = backend_.link_medium(t);
    }
    watchdog_.set_local_ranks(backend_.local_ranks(), results_.ranks);
    if (lead()) reporter_.start(results_.backend, results_.ranks, plan_);
    for (const std::string& text : plan_.notes) note(text);
    for (const std::string& text : backend_.notes()) note(text);
    for (const GroupInfo& g : results_.groups) {
      if (!g.skipped.empty()) {
        note(fmt::format("{} tier not measured: {}", to_string(g.tier), g.skipped));
        continue;
      }
      backend_.open(g.tier);
      for (Collective c : plan_.collectives) sweep(g, c);
    }
    measure_pairs();
    for (const GemmShape& shape : plan_.gemms) gemm(shape);
    if (plan_.host) measure_host(backend_, control_, plan_, reporter_, results_);
    return std::move(results_);
  }

 private:
  bool lead() const { return control_.process() == 0; }

  void note(const std::string& text) {
    results_.notes.push_back(text);
    if (lead()) reporter_.note(text);
  }

  void maybe_hang() {
    const int r = plan_.settings.debug_hang_rank;
    if (r < 0 || hang_checked_) return;
    hang_checked_ = true;
    const auto local = backend_.local_ranks();
    if (std::find(local.begin(), local.end(), r) == local.end()) return;
    std::fprintf(stderr, "probe: %s rank %d: --debug-hang-rank: this rank stops responding now\n",
                 control_.host().c_str(), r);
    std::fflush(stderr);
    if (!backend_.hang(r)) std::raise(SIGSTOP);
  }

  void sweep(const GroupInfo& g, Collective c) {
    if (lead()) reporter_.section(g, c);
    const size_t first = results_.rows.size();
    size_t last_bytes = 0;
    for (size_t bytes = plan_.min_bytes; bytes <= plan_.max_bytes; bytes *= 2) {
      const CollectiveShape shape = shape_of(c, bytes, g.ranks);
      if (shape.bytes == 0 || shape.bytes == last_bytes) continue;
      last_bytes = shape.bytes;
      maybe_hang();
      const std::string what =
          fmt::format("{} {} B on the {} tier", info(c).name, shape.bytes, to_string(g.tier));
      const auto mine = backend_.collective(g.tier, shape, plan_.settings);
      const Gathered all = gather(control_, mine, what);
      CollectiveRow row;
      row.group = g;
      row.shape = shape;
      row.time = all.time;
      row.algbw_bytes_per_s = algbw(static_cast<double>(shape.bytes), all.time.avg_s);
      row.busbw_bytes_per_s = busbw(c, g.ranks, static_cast<double>(shape.bytes), all.time.avg_s);
      row.wrong = all.wrong;
      row.rank_s = all.rank_s;
      row.call = all.detail;
      results_.rows.push_back(row);
      if (lead()) reporter_.row(row);
    }
    if (lead()) {
      reporter_.section_end(g, c, std::span<const CollectiveRow>(results_.rows).subspan(first));
    }
  }

  // Rounds of disjoint node pairs (sampling.hpp) over the inter tier's communicator.
  void measure_pairs() {
    const GroupInfo& inter = results_.groups[static_cast<size_t>(Tier::inter)];
    if (plan_.max_pair_rounds <= 0 || !inter.skipped.empty() || plan_.pair_bytes == 0) return;
    NetworkShape net;
    net.nodes = inter.ranks;
    net.nodes_per_domain = plan_.nodes_per_domain;
    net.nodes_per_leaf = plan_.nodes_per_leaf;
    const auto rounds = plan_pair_rounds(net, plan_.max_pair_rounds);
    std::vector<int> first_rank(static_cast<size_t>(net.nodes), -1);
    for (const RankInfo& r : results_.ranks) {
      if (r.local_rank == 0) first_rank[static_cast<size_t>(r.node)] = r.rank;
    }
    const CollectiveShape shape = shape_of(Collective::send_recv, plan_.pair_bytes, 2);
    for (const PairRound& round : rounds) {
      std::vector<int> partner(static_cast<size_t>(net.nodes), -1);
      for (const auto& [a, b] : round.pairs) {
        partner[static_cast<size_t>(a)] = b;
        partner[static_cast<size_t>(b)] = a;
      }
      const std::string what =
          fmt::format("node pairs at offset {} ({} B both ways)", round.offset, shape.bytes);
      const Gathered all =
          gather(control_, backend_.exchange(partner, shape, plan_.settings), what);
      std::map<int, double> seconds;
      std::map<int, size_t> wrong;
      for (const auto& [rank, s] : all.rank_s) seconds[rank] = s;
      for (const auto& [rank, w] : all.rank_wrong) wrong[rank] = w;
      for (size_t i = 0; i < round.pairs.size(); ++i) {
        const auto [a, b] = round.pairs[i];
        PairRow row;
        row.offset = round.offset;
        row.node_a = a;
        row.node_b = b;
        row.rank_a = first_rank[static_cast<size_t>(a)];
        row.rank_b = first_rank[static_cast<size_t>(b)];
        row.host_a = results_.ranks.at(static_cast<size_t>(row.rank_a)).host;
        row.host_b = results_.ranks.at(static_cast<size_t>(row.rank_b)).host;
        row.where = to_string(round.classes[i]);
        row.bytes = shape.bytes;
        row.seconds = std::max(seconds[row.rank_a], seconds[row.rank_b]);
        row.bytes_per_s = row.seconds > 0 ? static_cast<double>(row.bytes) / row.seconds : 0;
        row.wrong = wrong[row.rank_a] + wrong[row.rank_b];
        results_.pairs.push_back(row);
        if (lead()) reporter_.pair_row(row);
      }
    }
  }

  void gemm(const GemmShape& shape) {
    const std::string what =
        fmt::format("GEMM {}x{}x{} {}", shape.m, shape.n, shape.k, gemm_format_name(shape));
    const std::string refusal = backend_.why_not(gemm_format_of(shape));
    if (!refusal.empty()) {
      note(fmt::format("{}: not measured: {}", what, refusal));
      return;
    }
    GemmTiming timing;
    timing.warmup_iters = plan_.settings.warmup;
    timing.warmup_s = plan_.gemm_warmup_s;
    timing.budget_s = plan_.gemm_budget_s;
    timing.max_iters = plan_.gemm_max_iters;
    timing.min_iters = std::min(kMinGemmIters, timing.max_iters);
    const auto local = backend_.local_ranks();
    if (std::find(local.begin(), local.end(), plan_.settings.debug_slow_rank) != local.end()) {
      timing.debug_delay_s = 2e-3;  // a straggler for the tests to find
    }
    const Gathered all = gather(control_, backend_.gemm(shape, timing), what);
    if (!all.ran) {
      note(fmt::format("{}: {}; skipped", what, all.detail));
      return;
    }
    GemmRow row;
    row.shape = shape;
    row.time = all.time;
    // The median call: one preempted or throttled call moves a mean, not a median.
    row.flops_per_s = all.time.median_s > 0 ? shape.flops() / all.time.median_s : 0;
    row.wrong = all.wrong;
    row.iters = all.iterations;
    row.detail = all.detail;
    row.rank_s = all.rank_s;
    results_.gemms.push_back(row);
    if (lead()) reporter_.gemm_row(row);
  }

  Backend& backend_;
  Control& control_;
  Watchdog& watchdog_;
  const SweepPlan& plan_;
  Reporter& reporter_;
  Results results_;
  bool hang_checked_ = false;
};

}  // namespace

Results run_probe(Backend& backend, Control& control, Watchdog& watchdog, const SweepPlan& plan,
                  Reporter& reporter) {
  return Run(backend, control, watchdog, plan, reporter).go();
}

}  // namespace shardplan::probe
