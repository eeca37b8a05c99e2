// Numbers as people read them and the fixed-width text table every subcommand prints.
#pragma once

#include <string>
#include <vector>

namespace shardplan {

std::string format_gib(double bytes);          // "104.3 GiB"
std::string format_bytes(double bytes);        // "112.0 GB" / "3.4 MB" (powers of 10)
std::string format_rate(double bytes_per_s);   // "900 GB/s", "1.25 GB/s"
std::string format_seconds(double s);          // "27.2 ms", "19.6 s", "3.1 h", "2.4 d"
std::string format_percent(double share);      // "6.2%"
std::string format_count(double n);            // "6.74B", "350M", "1.2k"
std::string format_flops(double flops_per_s);  // "312 TFLOP/s"

/// A fixed-width text table: a header row, a rule, rows; numbers right-aligned.
class Table {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::right;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);
  void add_rule();
  std::string render(const std::string& indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

}  // namespace shardplan
