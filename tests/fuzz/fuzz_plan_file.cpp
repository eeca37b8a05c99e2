// A plan file (`estimate --json` or `plan --json` output) read back by `emit --plan`.
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto pick =
      data[0] % 2 == 0 ? shardplan::PlanPick::recommended : shardplan::PlanPick::fastest;
  try {
    shardplan::read_plan_file(shardplan::fuzz::text_of(data + 1, size - 1), "plan.json", pick);
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
