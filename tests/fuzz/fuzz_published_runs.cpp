// A published-runs file (`validate --runs FILE`), and the same bytes as a sweep of layouts that
// ran or ran out of memory (profiles/validation/memory-sweeps.json's format).
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = shardplan::fuzz::text_of(data, size);
  try {
    shardplan::load_published_runs(text, "runs.json");
  } catch (const shardplan::InputError&) {
  }
  try {
    shardplan::load_memory_sweeps(text, "sweeps.json");
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
