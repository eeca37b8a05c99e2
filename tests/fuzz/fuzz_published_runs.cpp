// A published-runs file (`validate --runs FILE`).
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    shardplan::load_published_runs(shardplan::fuzz::text_of(data, size), "runs.json");
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
