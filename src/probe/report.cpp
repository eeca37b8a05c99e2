// Reporters: the nccl-tests-style table on stdout (grep/awk friendly: '#' before every line that
// is not data, fixed columns) and progress lines on stderr, both fed by the harness as results
// arrive; and the summary of the fit that closes the table.
#include <fmt/format.h>

#include <algorithm>

#include "fit.hpp"
#include "shardplan/units.hpp"

namespace shardplan::probe {
namespace {

const char* redop_of(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter ? "sum" : "none";
}

class TableReporter final : public Reporter {
 public:
  explicit TableReporter(std::FILE* out) : out_(out) {}

  void start(const std::string& backend, const std::vector<RankInfo>& ranks,
             const SweepPlan& plan) override {
    fmt::print(out_,
               "# shardplan probe: back-end {}, {} rank(s); nccl-tests definitions "
               "(doc/PERFORMANCE.md), out-of-place\n",
               backend, ranks.size());
    for (const RankInfo& r : ranks) {
      fmt::print(out_, "#  Rank {:>3} Node {:>3} Local {:>2} on {:>16}  device {}\n", r.rank,
                 r.node, r.local_rank, r.host, r.device);
    }
    fmt::print(out_, "# type float; warm-up {}, timed iterations {}; watchdog {} s per operation\n",
               plan.settings.warmup, plan.settings.iters, plan.settings.timeout_s);
    std::fflush(out_);
  }

  void section(const GroupInfo& g, Collective c) override {
    fmt::print(out_,
               "#\n# {} ({}) on the {} tier: {} ranks, {} per node, {} group(s) at once; "
               "size = {}\n#\n",
               info(c).name, info(c).nccl_tests, to_string(g.tier), g.ranks, g.ranks_per_node,
               g.groups, info(c).size_meaning);
    fmt::print(out_, "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}\n", "size",
               "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong");
    fmt::print(out_, "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}\n", "(B)",
               "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  }

  void row(const CollectiveRow& r) override {
    const Collective c = r.shape.kind;
    fmt::print(out_, "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9.2f}  {:>7.2f}  {:>7.2f}  {:>6}\n",
               r.shape.bytes, r.shape.count(), "float", redop_of(c),
               c == Collective::broadcast ? 0 : -1, r.time.avg_s * 1e6, r.algbw_bytes_per_s / kGB,
               r.busbw_bytes_per_s / kGB, r.wrong);
    std::fflush(out_);
  }

  void section_end(const GroupInfo&, Collective, std::span<const CollectiveRow> rows) override {
    size_t wrong = 0;
    double sum = 0;
    for (const CollectiveRow& r : rows) {
      wrong += r.wrong;
      sum += r.busbw_bytes_per_s / kGB;
    }
    fmt::print(out_, "# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
    fmt::print(out_, "# Avg bus bandwidth    : {:.4f}\n",
               rows.empty() ? 0.0 : sum / static_cast<double>(rows.size()));
    std::fflush(out_);
  }

  void gemm_row(const GemmRow& g) override {
    if (!gemm_header_) {
      gemm_header_ = true;
      fmt::print(out_,
                 "#\n# GEMM D = A^T B of m x n x k on every rank at once, after a timed "
                 "warm-up; TFLOP/s = 2mnk / the median call (averaged across ranks); iters = "
                 "timed calls\n#\n");
      fmt::print(out_, "#{:>8}  {:>8}  {:>8}  {:>6}  {:>11}  {:>9}  {:>6}  {:>6}  {}\n", "m", "n",
                 "k", "dtype", "median", "TFLOP/s", "iters", "#wrong", "call, shape");
      fmt::print(out_, "#{:>8}  {:>8}  {:>8}  {:>6}  {:>11}  {:>9}  {:>6}  {:>6}\n", "", "", "", "",
                 "(us)", "", "", "");
    }
    fmt::print(out_, "{:>9}  {:>8}  {:>8}  {:>6}  {:>11.2f}  {:>9.3f}  {:>6}  {:>6}  {}, {}\n",
               g.shape.m, g.shape.n, g.shape.k, gemm_format_name(g.shape), g.time.median_s * 1e6,
               g.flops_per_s / kTera, g.iters, g.wrong, g.detail, g.shape.label);
    std::fflush(out_);
  }

  void host_row(const HostRow& h) override {
    if (!host_header_) {
      host_header_ = true;
      fmt::print(
          out_,
          "#\n# Host memory on every rank of a node at once. h2d/d2h: one pinned buffer to "
          "or from each GPU, GB/s = bytes / the average time across ranks (one GPU's link).\n"
          "# stream_copy/stream_triad: STREAM over arrays of the size given per rank, "
          "node GB/s = the sum over a node's ranks of 2 (copy) or 3 (triad) x size / time\n#\n");
      fmt::print(out_, "#{:>13}  {:>12}  {:>11}  {:>10}  {:>10}  {:>6}\n", "move", "size", "time",
                 "rank", "node", "#wrong");
      fmt::print(out_, "#{:>13}  {:>12}  {:>11}  {:>10}  {:>10}  {:>6}\n", "", "(B)", "(us)",
                 "(GB/s)", "(GB/s)", "");
    }
    fmt::print(out_, "{:>14}  {:>12}  {:>11.1f}  {:>10.3f}  {:>10.3f}  {:>6}\n",
               to_string(h.shape.kind), h.shape.array_bytes, h.time.avg_s * 1e6,
               h.rank_bytes_per_s / kGB, h.node_bytes_per_s / kGB, h.wrong);
    std::fflush(out_);
  }

  void pair_row(const PairRow& p) override {
    if (!pair_header_) {
      pair_header_ = true;
      fmt::print(out_,
                 "#\n# Node pairs: in each round every pair's first ranks exchange the size both "
                 "ways at once; GB/s = size / the slower side's mean time (one direction)\n#\n");
      fmt::print(out_, "#{:>6}  {:>6}  {:>6}  {:>12}  {:>11}  {:>9}  {:>6}  {}\n", "offset",
                 "node a", "node b", "size", "time", "GB/s", "#wrong", "hosts, where");
      fmt::print(out_, "#{:>6}  {:>6}  {:>6}  {:>12}  {:>11}  {:>9}  {:>6}\n", "", "", "", "(B)",
                 "(us)", "", "");
    }
    fmt::print(out_, "{:>7}  {:>6}  {:>6}  {:>12}  {:>11.1f}  {:>9.3f}  {:>6}  {} <-> {}, {}\n",
               p.offset, p.node_a, p.node_b, p.bytes, p.seconds * 1e6, p.bytes_per_s / kGB, p.wrong,
               p.host_a, p.host_b, p.where);
    std::fflush(out_);
  }

  void note(const std::string& text) override { fmt::print(out_, "# note: {}\n", text); }

 private:
  std::FILE* out_;
  bool gemm_header_ = false;
  bool host_header_ = false;
  bool pair_header_ = false;
};

class ProgressReporter final : public Reporter {
 public:
  explicit ProgressReporter(std::FILE* out) : out_(out) {}

  void start(const std::string& backend, const std::vector<RankInfo>& ranks,
             const SweepPlan& plan) override {
    size_t sizes = 0;
    for (size_t b = plan.min_bytes; b <= plan.max_bytes; b *= 2) ++sizes;
    fmt::print(out_,
               "probe: {} back-end, {} rank(s): {} collective(s) x up to {} sizes per tier, "
               "{} GEMM shape(s)\n",
               backend, ranks.size(), plan.collectives.size(), sizes, plan.gemms.size());
    std::fflush(out_);
  }
  void row(const CollectiveRow& r) override {
    fmt::print(out_, "probe: {} {} {} B: {:.1f} us, busbw {:.3f} GB/s{}\n", to_string(r.group.tier),
               info(r.shape.kind).name, r.shape.bytes, r.time.avg_s * 1e6,
               r.busbw_bytes_per_s / kGB, r.wrong ? fmt::format(", {} WRONG", r.wrong) : "");
    std::fflush(out_);
  }
  void gemm_row(const GemmRow& g) override {
    fmt::print(out_, "probe: GEMM {}x{}x{} {}: {:.3f} TFLOP/s{}\n", g.shape.m, g.shape.n, g.shape.k,
               gemm_format_name(g.shape), g.flops_per_s / kTera,
               g.wrong ? fmt::format(", {} WRONG", g.wrong) : "");
    std::fflush(out_);
  }
  void host_row(const HostRow& h) override {
    fmt::print(out_, "probe: host {} {} B: {:.3f} GB/s per rank, {:.3f} GB/s per node{}\n",
               to_string(h.shape.kind), h.shape.array_bytes, h.rank_bytes_per_s / kGB,
               h.node_bytes_per_s / kGB, h.wrong ? fmt::format(", {} WRONG", h.wrong) : "");
    std::fflush(out_);
  }
  void pair_row(const PairRow& p) override {
    fmt::print(out_, "probe: pair {} <-> {} ({}): {:.3f} GB/s{}\n", p.host_a, p.host_b, p.where,
               p.bytes_per_s / kGB, p.wrong ? fmt::format(", {} WRONG", p.wrong) : "");
    std::fflush(out_);
  }
  void note(const std::string& text) override {
    fmt::print(out_, "probe: note: {}\n", text);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
};

class TeeReporter final : public Reporter {
 public:
  explicit TeeReporter(std::vector<std::unique_ptr<Reporter>> parts) : parts_(std::move(parts)) {}
  void start(const std::string& b, const std::vector<RankInfo>& r, const SweepPlan& p) override {
    for (auto& x : parts_) x->start(b, r, p);
  }
  void section(const GroupInfo& g, Collective c) override {
    for (auto& x : parts_) x->section(g, c);
  }
  void row(const CollectiveRow& r) override {
    for (auto& x : parts_) x->row(r);
  }
  void section_end(const GroupInfo& g, Collective c, std::span<const CollectiveRow> rows) override {
    for (auto& x : parts_) x->section_end(g, c, rows);
  }
  void gemm_row(const GemmRow& g) override {
    for (auto& x : parts_) x->gemm_row(g);
  }
  void pair_row(const PairRow& p) override {
    for (auto& x : parts_) x->pair_row(p);
  }
  void host_row(const HostRow& h) override {
    for (auto& x : parts_) x->host_row(h);
  }
  void note(const std::string& text) override {
    for (auto& x : parts_) x->note(text);
  }

 private:
  std::vector<std::unique_ptr<Reporter>> parts_;
};

}  // namespace

std::unique_ptr<Reporter> make_table_reporter(std::FILE* out) {
  return std::make_unique<TableReporter>(out);
}
std::unique_ptr<Reporter> make_progress_reporter(std::FILE* out) {
  return std::make_unique<ProgressReporter>(out);
}
std::unique_ptr<Reporter> make_tee_reporter(std::vector<std::unique_ptr<Reporter>> parts) {
  return std::make_unique<TeeReporter>(std::move(parts));
}

std::vector<std::string> probe_warnings(const Results& r, const FitResult& fit) {
  std::vector<std::string> out;
  for (const TierFit& t : fit.tiers) {
    for (const auto& [c, f] : t.collectives) {
      if (f.residual <= kResidualWarning) continue;
      out.push_back(fmt::format(
          "{} {} fit misses the measured times by {:.0f}% (RMS, over {:.0f}%): its latency and "
          "busbw are rough; rerun with more iterations on an idle cluster",
          to_string(t.group.tier), info(c).name, f.residual * 100, kResidualWarning * 100));
    }
  }
  for (const GroupInfo& g : r.groups) {
    if (g.skipped.empty() || g.tier == Tier::world)
      continue;  // world's links are intra's and inter's
    out.push_back(fmt::format(
        "{} not measured ({}): the profile takes the preset's {} link for it, so plans that "
        "cross {} use nominal figures, not measured ones",
        to_string(g.tier), g.skipped, g.tier == Tier::intra ? "intra-node" : "inter-node",
        g.tier == Tier::intra ? "GPUs in a node" : "nodes"));
  }
  return out;
}

std::string render_summary(const Results& r, const FitResult& fit, const GpuSpec& gpu) {
  std::string out =
      "#\n# Fit: t = latency + S x bus factor / busbw per tier and collective "
      "(busbw: slope over the largest sizes; median iterations)\n";
  out += fmt::format("#  {:<6} {:<15} {:>12} {:>13} {:>12} {:>9}\n", "tier", "collective",
                     "latency(us)", "per-step(us)", "busbw(GB/s)", "residual");
  for (const TierFit& t : fit.tiers) {
    for (const auto& [c, f] : t.collectives) {
      out += fmt::format("#  {:<6} {:<15} {:>12.2f} {:>13.2f} {:>12.4f} {:>8.1f}%{}\n",
                         to_string(t.group.tier), info(c).name, f.latency_s * 1e6,
                         f.step_latency_s * 1e6, f.busbw_bytes_per_s / kGB, f.residual * 100,
                         f.residual > kResidualWarning ? " !" : "");
    }
  }
  for (const GroupInfo& g : r.groups) {
    if (!g.skipped.empty())
      out += fmt::format("#  {}: not measured ({})\n", to_string(g.tier), g.skipped);
  }
  for (const std::string& w : probe_warnings(r, fit)) out += "# WARNING: " + w + "\n";
  // The best GEMM per format.
  for (const GemmFormat& f : gemm_formats()) {
    const GemmRow* best = nullptr;
    for (const GemmRow& g : r.gemms) {
      if (&gemm_format_of(g.shape) == &f && g.wrong == 0 &&
          (!best || g.flops_per_s > best->flops_per_s))
        best = &g;
    }
    if (!best) continue;
    const double peak = gpu.peak_flops[static_cast<int>(f.dtype)];
    out += fmt::format("# GEMM best {} {:.3f} TFLOP/s at {}x{}x{}", f.name,
                       best->flops_per_s / kTera, best->shape.m, best->shape.n, best->shape.k);
    if (r.gemm_on_gpu && peak > 0) {
      out +=
          fmt::format(" = {:.1f}% of the {} dense {} peak {:.1f} TFLOP/s (isolated, median call)",
                      100 * best->flops_per_s / peak, gpu.name, to_string(f.dtype), peak / kTera);
    } else if (!r.gemm_on_gpu) {
      out += " (CPU; kept out of the GPU profile's efficiency curve)";
    }
    out += "\n";
  }
  if (!fit.gemm_curve.empty()) {
    out += fmt::format(
        "# GEMM efficiency curve ({} vs peak, {:.3f} x the isolated figure: the share of an isolated "
        "GEMM's speed that GEMMs inside a training step reach, as every GPU preset applies it to "
        "MAMF):",
        to_string(fit.curve_dtype), in_step_share());
    for (const EfficiencyPoint& p : fit.gemm_curve) {
      out += fmt::format(" [{:.3g}, {:.3f}]", p.flops, p.efficiency);
    }
    out += "\n";
  }
  const HostFit& h = fit.host;
  if (h.h2d_bytes_per_s > 0 || h.d2h_bytes_per_s > 0) {
    out += fmt::format(
        "# Host link per GPU ({} B pinned copies, all GPUs at once): "
        "h2d {:.2f} GB/s, d2h {:.2f} GB/s\n",
        h.link_bytes, h.h2d_bytes_per_s / kGB, h.d2h_bytes_per_s / kGB);
  }
  if (h.dram_bytes_per_s > 0) {
    out +=
        fmt::format("# CPU memory per node (STREAM Triad, {} rank(s) x {} B arrays): {:.2f} GB/s\n",
                    h.stream_ranks_per_node, h.stream_array_bytes, h.dram_bytes_per_s / kGB);
  }
  out +=
      fmt::format("# Stragglers (time > {:.2f} x the median across ranks):", kStragglerThreshold);
  if (fit.stragglers.empty()) out += " none";
  out += "\n";
  for (const Straggler& s : fit.stragglers) {
    out += fmt::format("#   rank {} on {}: {} took {:.1f} us, {:.2f} x the median {:.1f} us\n",
                       s.rank, s.host, s.what, s.seconds * 1e6, s.ratio, s.median_s * 1e6);
  }
  const size_t wrong = r.wrong();
  out += fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  return out;
}

}  // namespace shardplan::probe
