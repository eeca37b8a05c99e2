// Unit strings from flags: counts (7B, 2T), bandwidths (900GB/s), bytes (50TB), durations
// (30d, 15min), numbers, integers, links and failure rates (1e-5/gpu-hour). The first byte
// picks the parser.
#include "../../src/cli/runbook_options.hpp"
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"
#include "shardplan/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text = shardplan::fuzz::text_of(data + 1, size - 1);
  try {
    switch (data[0] % 8) {
      case 0:
        shardplan::parse_count(text, "--tokens");
        break;
      case 1:
        shardplan::parse_bandwidth(text, "--storage-bw");
        break;
      case 2:
        shardplan::parse_bytes(text, "--disk");
        break;
      case 3:
        shardplan::parse_duration(text, "--restart-cost");
        break;
      case 4:
        shardplan::parse_number(text, "--fragmentation");
        break;
      case 5:
        shardplan::parse_positive_int(text, "--gpus");
        break;
      case 6:
        shardplan::load_link(text, "--inter");
        break;
      default:
        shardplan::cli::parse_failure_rate(text, "--failure-rate");
    }
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
