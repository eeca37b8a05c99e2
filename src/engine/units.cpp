// Quantity parsing for the command line and profiles; the engine itself sees base units only.
#include "shardplan/units.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "shardplan/error.hpp"

namespace shardplan {
namespace {

std::string lower_without_spaces(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' || c == '_' || c == ',') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

struct NumberAndRest {
  double value = 0;
  std::string rest;
};

// Splits "900gb/s" into 900 and "gb/s". Accepts decimal and exponent forms.
NumberAndRest split_number(const std::string& text, const std::string& field,
                           std::string_view example) {
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) {
    throw InputError(field,
                     "'" + text + "' is not a number; expected e.g. " + std::string(example));
  }
  if (!std::isfinite(value)) throw InputError(field, "'" + text + "' is not finite");
  return {value, std::string(ptr, end)};
}

double require_positive(double value, std::string_view text, const std::string& field) {
  if (!(value > 0)) {
    throw InputError(field, "'" + std::string(text) + "' must be greater than zero");
  }
  return value;
}

double decimal_prefix(char c) {
  switch (c) {
    case 'k':
      return 1e3;
    case 'm':
      return 1e6;
    case 'g':
      return 1e9;
    case 't':
      return 1e12;
    case 'p':
      return 1e15;
    default:
      return 0;
  }
}

// A count with an optional k/M/B/T suffix; `example` is what a malformed one is told to look like.
double count_with_example(std::string_view text, const std::string& field,
                          std::string_view example) {
  const std::string s = lower_without_spaces(text);
  auto [value, rest] = split_number(s, field, example);
  double scale = 1;
  if (rest == "k") {
    scale = 1e3;
  } else if (rest == "m") {
    scale = 1e6;
  } else if (rest == "b" || rest == "g") {
    scale = 1e9;
  } else if (rest == "t") {
    scale = 1e12;
  } else if (!rest.empty()) {
    throw InputError(field, "'" + std::string(text) + "' has an unknown suffix '" + rest +
                                "'; valid suffixes are k, M, B (billion) and T");
  }
  return require_positive(value * scale, text, field);
}

}  // namespace

double parse_count(std::string_view text, const std::string& field) {
  return count_with_example(text, field, "7e9, 7B, 70M, 1.5T");
}

double parse_bandwidth(std::string_view text, const std::string& field) {
  const std::string s = lower_without_spaces(text);
  auto [value, rest] = split_number(s, field, "900GB/s, 10Gbit/s, 400Gb/s");
  // A bare number has no unit, and none is the obvious one: "--link 5" meant 5 GB/s or
  // 5 Gbit/s, never 5 bytes per second (which a 54,594-day step once priced).
  if (rest.empty()) {
    throw InputError(field, "'" + std::string(text) +
                                "' has no unit; a bandwidth needs one: e.g. " + std::string(text) +
                                "GB/s (bytes) or " + std::string(text) +
                                "Gbit/s (bits); write B/s for bytes per second");
  }
  if (rest == "b/s" || rest == "bytes/s") return require_positive(value, text, field);
  const double prefix = decimal_prefix(rest[0]);
  const std::string unit = prefix > 0 ? rest.substr(1) : rest;
  double bytes_per_unit = 0;
  // Upper-case B means bytes and lower-case b means bits on datasheets; the text was lowered,
  // so look at the original spelling for the one ambiguous form ("Gb/s" vs "GB/s").
  if (unit == "bit/s" || unit == "bps" || unit == "bits/s") {
    bytes_per_unit = 1.0 / 8.0;
  } else if (unit == "byte/s" || unit == "bytes/s") {
    bytes_per_unit = 1.0;
  } else if (unit == "b/s") {
    const auto pos = text.find_first_of("bB");
    bytes_per_unit = (pos != std::string_view::npos && text[pos] == 'b') ? 1.0 / 8.0 : 1.0;
  } else {
    throw InputError(field, "'" + std::string(text) +
                                "' is not a bandwidth; use e.g. 900GB/s (bytes), 10Gbit/s or "
                                "400Gb/s (bits)");
  }
  return require_positive(value * (prefix > 0 ? prefix : 1.0) * bytes_per_unit, text, field);
}

double round_significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits - 1 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

double parse_bytes(std::string_view text, const std::string& field) {
  const std::string s = lower_without_spaces(text);
  auto [value, rest] = split_number(s, field, "80GB, 80GiB, 2TB");
  if (rest.empty() || rest == "b") return require_positive(value, text, field);
  double scale = 0;
  if (rest.size() == 3 && rest[1] == 'i' && rest[2] == 'b') {
    const double p = decimal_prefix(rest[0]);
    const int power = p == 1e3    ? 1
                      : p == 1e6  ? 2
                      : p == 1e9  ? 3
                      : p == 1e12 ? 4
                      : p == 1e15 ? 5
                                  : 0;
    if (power > 0) scale = std::pow(1024.0, power);
  } else if (rest.size() == 2 && rest[1] == 'b') {
    scale = decimal_prefix(rest[0]);
  }
  if (scale == 0) {
    throw InputError(field, "'" + std::string(text) +
                                "' is not a size; use e.g. 80GB (10^9 bytes) or 80GiB (2^30)");
  }
  return require_positive(value * scale, text, field);
}

double parse_duration(std::string_view text, const std::string& field) {
  const std::string s = lower_without_spaces(text);
  auto [value, rest] = split_number(s, field, "30min, 2h, 90s, 1.5d");
  double scale = 0;
  if (rest.empty() || rest == "s" || rest == "sec") scale = 1;
  if (rest == "m" || rest == "min") scale = 60;
  if (rest == "h" || rest == "hr" || rest == "hours") scale = 3600;
  if (rest == "d" || rest == "days") scale = 86400;
  if (scale == 0) {
    throw InputError(field,
                     "'" + std::string(text) + "' is not a duration; use e.g. 30min, 2h, 90s");
  }
  return require_positive(value * scale, text, field);
}

double parse_number(std::string_view text, const std::string& field) {
  const std::string s = lower_without_spaces(text);
  auto [value, rest] = split_number(s, field, "0.05, 2.5, 1e-3");
  if (!rest.empty()) {
    throw InputError(
        field, "'" + std::string(text) + "' is not a plain number (unexpected '" + rest + "')");
  }
  return value;
}

namespace {

// A count read by parse_count that is whole and at most `max`: a number past the limit is "too
// large" with the limit (99999999999999999999 is whole, just beyond any count), a fraction is
// not a whole number.
long long whole_count(std::string_view text, const std::string& field, long long max) {
  // A degree, a batch or a GPU count: told to look like one, not like a parameter count.
  const double value = count_with_example(text, field, "8, 64, 1k");
  if (value > static_cast<double>(max)) {
    throw InputError(field,
                     "'" + std::string(text) + "' is too large; at most " + std::to_string(max));
  }
  if (value != std::floor(value)) {
    throw InputError(field, "'" + std::string(text) + "' must be a whole number");
  }
  return static_cast<long long>(value);
}

// The largest count a double holds exactly with room to spare (2^53 is about 9.007e15).
constexpr long long kMaxExactCount = 9'000'000'000'000'000;

}  // namespace

long long parse_positive_int(std::string_view text, const std::string& field) {
  return whole_count(text, field, kMaxExactCount);
}

int parse_int(std::string_view text, const std::string& field, long long max) {
  return static_cast<int>(whole_count(text, field, max));
}

std::uint32_t parse_seed(std::string_view text, const std::string& field) {
  // Digits only: a seed is an exact value, so neither a suffix ("7B") nor a fraction nor an
  // exponent is a seed; 0 is one (numpy, torch.manual_seed and Megatron's --seed take it).
  const std::string s(text);
  constexpr std::uint64_t kMaxSeed = 4'294'967'295;  // 2^32 - 1: numpy's RandomState limit
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ptr != s.data() + s.size() ||
      std::isdigit(static_cast<unsigned char>(s[0])) == 0) {
    throw InputError(field, "'" + s + "' is not a seed; give a whole number from 0 to " +
                                std::to_string(kMaxSeed) + " in digits");
  }
  if (ec == std::errc::result_out_of_range || value > kMaxSeed) {
    throw InputError(field,
                     "'" + s + "' is too large for a seed; at most " + std::to_string(kMaxSeed));
  }
  return static_cast<std::uint32_t>(value);
}

int parse_int_or(std::string_view text, const std::string& field, int fallback, long long max) {
  return text.empty() ? fallback : parse_int(text, field, max);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace shardplan
