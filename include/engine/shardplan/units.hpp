// Parsing of the quantities users type (7e9, 7B, 900GB/s, 10Gbit/s, 80GiB) into base units.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;
inline constexpr double kTera = 1e12;

/// A plain count with an optional SI-style suffix: "7e9", "7B", "70M", "1.5T", "8k", "1,024".
/// Throws InputError naming `field` when the text is not a positive finite number.
double parse_count(std::string_view text, const std::string& field);

/// A bandwidth in bytes per second: "900GB/s", "450 GB/s", "10Gbit/s", "400Gb/s", "25Gbps",
/// "1.25e9B/s". Bits are divided by 8; k/M/G/T are powers of 10 as on datasheets. A bare number
/// has no unit and is refused ("--link 5" meant GB/s or Gbit/s, never bytes per second).
double parse_bandwidth(std::string_view text, const std::string& field);

/// `v` rounded to `digits` significant digits (0, infinities and NaN as they are).
double round_significant(double v, int digits);

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

/// A size in bytes: "80GB" (1e9), "80GiB" (2^30), "1.5TB", "2e12". A bare number is bytes.
double parse_bytes(std::string_view text, const std::string& field);

/// A duration in seconds: "30min", "2h", "90s", "1.5d", or a bare number of seconds.
double parse_duration(std::string_view text, const std::string& field);

/// A plain finite number, the whole text ("0.05", "2.5", "1e-3"); InputError naming `field`
/// otherwise. Range checks are the caller's.
double parse_number(std::string_view text, const std::string& field);

/// A positive integer; "1,024" and "1k" are accepted. Throws InputError naming `field`.
long long parse_positive_int(std::string_view text, const std::string& field);

/// A positive integer that fits an int, at most `max` ("--tp", "--iters", ...): InputError naming
/// `field` when it is not a whole positive number or is larger than `max`.
int parse_int(std::string_view text, const std::string& field, long long max = 1'000'000'000);

/// A random seed: a whole number 0..2^32-1 written in digits (no suffix, no exponent: "7B" is
/// not a seed). InputError naming `field` otherwise.
std::uint32_t parse_seed(std::string_view text, const std::string& field);

/// parse_int, or `fallback` when the flag was left out (empty text).
int parse_int_or(std::string_view text, const std::string& field, int fallback,
                 long long max = 1'000'000'000);

}  // namespace shardplan
