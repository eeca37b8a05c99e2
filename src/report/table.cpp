// Numbers as people read them and the fixed-width table every subcommand prints.
#include "shardplan/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "shardplan/units.hpp"

namespace shardplan {

std::string format_gib(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / kGiB);
}

std::string format_bytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} MB", bytes / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f} kB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string format_rate(double bytes_per_s) {
  const double gb = bytes_per_s / 1e9;
  if (gb >= 100) return fmt::format("{:.0f} GB/s", gb);
  if (gb >= 1) return fmt::format("{:.3g} GB/s", gb);
  return fmt::format("{:.3g} MB/s", bytes_per_s / 1e6);
}

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "-";
  if (s == 0) return "0";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 3 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string format_percent(double share) {
  if (!std::isfinite(share)) return "-";
  return share * 100 < 9.95 ? fmt::format("{:.1f}%", share * 100)
                            : fmt::format("{:.0f}%", share * 100);
}

std::string format_count(double n) {
  if (n >= 1e12) return fmt::format("{:.2f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.0f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string format_flops(double flops_per_s) {
  return fmt::format("{:.0f} TFLOP/s", flops_per_s / kTera);
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void Table::add_rule() {
  rows_.emplace_back();
}

std::string Table::render(const std::string& indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) width[i] = columns_[i].header.size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = indent;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string& cell = cells[i];
      const size_t pad = width[i] - cell.size();
      const bool right = columns_[i].align == Align::right;
      if (i > 0) out += "  ";
      if (right) out.append(pad, ' ');
      out += cell;
      if (!right && i + 1 < columns_.size()) out.append(pad, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<std::string> header;
  size_t total = 0;
  for (size_t i = 0; i < columns_.size(); ++i) {
    header.push_back(columns_[i].header);
    total += width[i] + (i > 0 ? 2 : 0);
  }
  std::string out = line(header);
  const std::string rule = indent + std::string(total, '-') + "\n";
  out += rule;
  for (const auto& row : rows_) out += row.empty() ? rule : line(row);
  return out;
}

}  // namespace shardplan
