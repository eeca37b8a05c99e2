// Quantity parsing: the forms the CLI accepts (7e9, 7B, 900GB/s, 10Gbit/s, 400Gb/s).
#include "shardplan/units.hpp"

#include <doctest/doctest.h>

#include "shardplan/error.hpp"

using namespace shardplan;

TEST_CASE("counts accept exponents and B/M/T suffixes") {
  CHECK(parse_count("7e9", "--params") == 7e9);
  CHECK(parse_count("7B", "--params") == 7e9);
  CHECK(parse_count("6.7b", "--params") == doctest::Approx(6.7e9));
  CHECK(parse_count("350M", "--params") == 350e6);
  CHECK(parse_count("1.5T", "--tokens") == 1.5e12);
  CHECK(parse_count("1,024", "--gpus") == 1024);
  CHECK_THROWS_AS(parse_count("-4", "--global-batch"), InputError);
  CHECK_THROWS_AS(parse_count("0", "--gpus"), InputError);
  CHECK_THROWS_AS(parse_count("7Q", "--params"), InputError);
  CHECK_THROWS_AS(parse_count("lots", "--params"), InputError);
  CHECK_THROWS_AS(parse_positive_int("2.5", "--tp"), InputError);
}

TEST_CASE("errors name the field") {
  try {
    parse_count("-4", "--global-batch");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.field() == "--global-batch");
    CHECK(std::string(e.what()).find("greater than zero") != std::string::npos);
  }
}

// A degree or a batch that is not a number is shown a degree's form, not a parameter count's
// ("--dp-shard abc" was told "expected e.g. 7e9, 7B").
TEST_CASE("a malformed whole count is shown whole counts as the example") {
  try {
    (void)parse_int("abc", "--dp-shard", 1'000'000);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.field() == "--dp-shard");
    CHECK(std::string(e.what()).find("expected e.g. 8, 64, 1k") != std::string::npos);
    CHECK(std::string(e.what()).find("7B") == std::string::npos);
  }
  try {
    (void)parse_count("abc", "--params");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("expected e.g. 7e9, 7B") != std::string::npos);
  }
}

TEST_CASE("bandwidths: bytes with B, bits with b or bit") {
  CHECK(parse_bandwidth("900GB/s", "--link") == 900e9);
  CHECK(parse_bandwidth("900 GB/s", "--link") == 900e9);
  CHECK(parse_bandwidth("10Gbit/s", "--link") == 1.25e9);  // 10 GbE = 10e9 / 8 = 1.25 GB/s
  CHECK(parse_bandwidth("400Gb/s", "--link") == 50e9);
  CHECK(parse_bandwidth("25Gbps", "--link") == doctest::Approx(3.125e9));
  CHECK(parse_bandwidth("1.25e9B/s", "--link") == 1.25e9);
  // No unit, no guess: "--link 5" priced 5 bytes per second (a 54,594-day step).
  CHECK_THROWS_WITH_AS(parse_bandwidth("5", "--link"),
                       doctest::Contains("'5' has no unit; a bandwidth needs one: e.g. 5GB/s"),
                       InputError);
  CHECK_THROWS_AS(parse_bandwidth("100", "--inter"), InputError);
  CHECK_THROWS_AS(parse_bandwidth("fast", "--link"), InputError);
  CHECK_THROWS_AS(parse_bandwidth("10 parsecs", "--link"), InputError);
  CHECK_THROWS_AS(parse_bandwidth("0GB/s", "--link"), InputError);
}

TEST_CASE("plain numbers take the whole text") {
  CHECK(parse_number("0.05", "--fragmentation") == 0.05);
  CHECK(parse_number("2.5", "--gpu-hour-cost") == 2.5);
  CHECK_THROWS_AS(parse_number("0.05abc", "--fragmentation"), InputError);
  CHECK_THROWS_AS(parse_number("2x", "--gpu-hour-cost"), InputError);
  CHECK_THROWS_AS(parse_number("cheap", "--gpu-hour-cost"), InputError);
}

TEST_CASE("sizes and durations") {
  CHECK(parse_bytes("80GB", "--disk") == 80e9);
  CHECK(parse_bytes("80GiB", "--disk") == 80.0 * kGiB);
  CHECK(parse_bytes("2TB", "--disk") == 2e12);
  CHECK(parse_duration("30min", "--interval") == 1800);
  CHECK(parse_duration("2h", "--interval") == 7200);
  CHECK(parse_duration("90", "--interval") == 90);
  CHECK_THROWS_AS(parse_duration("soon", "--interval"), InputError);
}
