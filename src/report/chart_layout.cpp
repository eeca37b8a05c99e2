// Where things go on a chart, worked out before Vega draws it: scales with their domains given,
// tick values whose labels all differ, and labels placed where nothing else is (see
// chart_parts.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "chart_parts.hpp"

namespace shardplan::charts {

using nlohmann::json;

namespace {

double along(const PixelScale& s, double value) {
  if (s.log) return (std::log(value) - std::log(s.lo)) / (std::log(s.hi) - std::log(s.lo));
  return (value - s.lo) / (s.hi - s.lo);
}

// The significant digits `v` needs to be written exactly (1.5e6: 2, 2e6: 1), at most 6.
int significant_digits(double v) {
  if (v == 0) return 1;
  for (int p = 1; p < 6; ++p) {
    const double scale = std::pow(10.0, p - 1 - std::floor(std::log10(std::abs(v))));
    if (std::abs(std::round(v * scale) / scale - v) <= 1e-9 * std::abs(v)) return p;
  }
  return 6;
}

// Values of `steps` x 10^k inside [lo, hi] (a log scale's decade subdivision).
std::vector<double> log_series(double lo, double hi, const std::vector<double>& steps) {
  std::vector<double> out;
  for (int k = static_cast<int>(std::floor(std::log10(lo))) - 1;
       k <= static_cast<int>(std::ceil(std::log10(hi))); ++k) {
    for (double m : steps) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo * (1 - 1e-12) && v <= hi * (1 + 1e-12)) out.push_back(v);
    }
  }
  return out;
}

// Multiples of `step` inside [lo, hi].
std::vector<double> linear_series(double lo, double hi, double step) {
  std::vector<double> out;
  const auto first = static_cast<long long>(std::ceil(lo / step - 1e-9));
  const auto last = static_cast<long long>(std::floor(hi / step + 1e-9));
  for (long long i = first; i <= last; ++i) out.push_back(static_cast<double>(i) * step);
  return out;
}

bool spaced(const PixelScale& s, const std::vector<double>& values, double min_gap_px) {
  for (size_t i = 1; i < values.size(); ++i) {
    if (std::abs(s.to_px(values[i]) - s.to_px(values[i - 1])) < min_gap_px) return false;
  }
  return true;
}

}  // namespace

double PixelScale::to_px(double value) const {
  const double t = along(*this, value);
  return (down ? 1 - t : t) * pixels;
}

double PixelScale::to_value(double px) const {
  const double t = down ? 1 - px / pixels : px / pixels;
  if (log) return std::exp(std::log(lo) + t * (std::log(hi) - std::log(lo)));
  return lo + t * (hi - lo);
}

json PixelScale::vega() const {
  return {{"type", log ? "log" : "linear"}, {"domain", {lo, hi}}, {"nice", false}, {"zero", false}};
}

PixelScale fit_scale(const std::vector<double>& values, double pixels, bool log, bool down,
                     double pad) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (double v : values) {
    if (log && !(v > 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!(lo <= hi)) lo = hi = log ? 1 : 0;
  PixelScale s{.lo = lo, .hi = hi, .pixels = pixels, .log = log, .down = down};
  if (log) {
    const double span = std::max(std::log10(hi / lo), 0.3);  // one point: a factor of 2 around it
    const double mid = std::sqrt(lo * hi);
    s.lo = std::min(lo, mid / std::pow(10.0, span / 2)) / std::pow(10.0, pad * span);
    s.hi = std::max(hi, mid * std::pow(10.0, span / 2)) * std::pow(10.0, pad * span);
  } else {
    const double span = hi > lo ? hi - lo : std::max(std::abs(hi), 1.0);
    s.lo = lo - pad * span;
    s.hi = hi + pad * span;
  }
  return s;
}

json ticks(const PixelScale& s, double min_gap_px, const std::string& format,
           const std::string& prefix) {
  if (!(s.hi > s.lo) || !std::isfinite(s.hi - s.lo) || (s.log && !(s.lo > 0))) {
    return {{"values", json::array()}, {"format", prefix + ",~" + format}};  // nothing to tick
  }
  // A log scale a decade wide or more is ticked at decade subdivisions first.
  const bool decades = s.log && s.hi / s.lo >= 10;
  std::vector<std::vector<double>> candidates;  // densest first
  if (decades) {
    for (const std::vector<double>& steps : std::vector<std::vector<double>>{
             {1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 5, 7}, {1, 2, 5}, {1, 3}, {1}}) {
      candidates.push_back(log_series(s.lo, s.hi, steps));
    }
  }
  // 1-2-5 steps, as a linear axis has them; on a log scale less than a decade wide these are
  // what reads (a $1.2M..$1.6M axis ticked at $1.25M, $1.5M).
  const int decade = static_cast<int>(std::floor(std::log10(s.hi - s.lo)));
  for (int e = decade - 2; e <= decade; ++e) {
    for (double k : {1.0, 2.0, 2.5, 5.0})
      candidates.push_back(linear_series(s.lo, s.hi, k * std::pow(10.0, e)));
  }
  // A log scale a decade wide or more takes the densest decade subdivision that keeps its
  // neighbours apart, when it has three ticks at least; otherwise (and on a linear scale) the
  // 1-2-5 series with the most ticks that keeps them apart.
  const size_t log_series_count = decades ? 5 : 0;
  std::vector<double> chosen;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::vector<double>& c = candidates[i];
    if (c.size() < 2 || !spaced(s, c, min_gap_px)) continue;
    if (i < log_series_count && c.size() >= 3) {
      chosen = c;
      break;
    }
    if (c.size() > chosen.size()) chosen = c;
  }
  int digits = 1;
  for (double v : chosen) digits = std::max(digits, significant_digits(v));
  return {{"values", chosen}, {"format", fmt::format("{},.{}~{}", prefix, digits, format)}};
}

json position(const std::string& field, const std::string& title, const PixelScale& s,
              const json& axis) {
  return {{"field", field},
          {"type", "quantitative"},
          {"title", title},
          {"scale", s.vega()},
          {"axis", axis}};
}

double Box::overlap(const Box& o) const {
  const double w = std::min(x1, o.x1) - std::max(x0, o.x0);
  const double h = std::min(y1, o.y1) - std::max(y0, o.y0);
  return w > 0 && h > 0 ? w * h : 0;
}

Box point_box(double x, double y, double size) {
  const double r = std::sqrt(size) / 2 + 1;
  return {x - r, y - r, x + r, y + r};
}

std::vector<Box> segment_boxes(double x0, double y0, double x1, double y1, double thickness) {
  const double length = std::hypot(x1 - x0, y1 - y0);
  const int n = std::max(1, static_cast<int>(std::ceil(length / thickness)));
  std::vector<Box> out;
  out.reserve(static_cast<size_t>(n) + 1);
  for (int i = 0; i <= n; ++i) {
    const double x = x0 + (x1 - x0) * i / n;
    const double y = y0 + (y1 - y0) * i / n;
    out.push_back({x - thickness / 2, y - thickness / 2, x + thickness / 2, y + thickness / 2});
  }
  return out;
}

double text_width(const std::string& text, double font_size, bool bold) {
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // UTF-8 lead bytes
  return static_cast<double>(chars) * font_size * (bold ? 0.64 : 0.58);
}

std::vector<std::pair<double, double>> place_labels(const std::vector<Label>& labels,
                                                    std::vector<Box> obstacles, double width,
                                                    double height) {
  // Unit directions to the text box's nearest edge: right, upper right, up, upper left, left,
  // lower left, down, lower right.
  constexpr std::array<std::pair<int, int>, 8> kSpots = {
      {{1, 0}, {1, -1}, {0, -1}, {-1, -1}, {-1, 0}, {-1, 1}, {0, 1}, {1, 1}}};
  const Box plot{0, 0, width, height};
  std::vector<std::pair<double, double>> out;
  for (const Label& l : labels) {
    const double w = text_width(l.text, l.font_size, l.bold);
    const double h = l.font_size * 1.2;
    double best_cost = std::numeric_limits<double>::infinity();
    Box best{};
    for (double reach : {1.0, 2.2}) {
      for (const auto& [dx, dy] : kSpots) {
        const double gap = l.clearance * reach;
        const double cx = l.x + dx * (gap + w / 2);
        const double cy = l.y + dy * (gap + h / 2);
        const Box b{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
        double cost = (w * h - b.overlap(plot)) * 10;  // off the plot is worst
        for (const Box& o : obstacles) cost += b.overlap(o);
        cost += reach > 1 ? 0.5 : 0;  // near the point reads better, all else equal
        if (cost < best_cost) {
          best_cost = cost;
          best = b;
        }
      }
      if (best_cost < 1) break;
    }
    out.emplace_back((best.x0 + best.x1) / 2, (best.y0 + best.y1) / 2);
    obstacles.push_back(best);
  }
  return out;
}

double end_label_domain(const std::vector<std::pair<double, double>>& bars, double width) {
  double domain = 1e-9;
  for (const auto& [value, words_px] : bars) {
    const double room = std::max(width * 0.2, width - 5 - words_px - 4);
    domain = std::max(domain, value * width / room);
  }
  return domain;
}

}  // namespace shardplan::charts
