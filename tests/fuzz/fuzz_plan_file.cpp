// A plan file (`estimate --json` or `plan --json` output) read back by `emit --plan`.
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/plan_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks: recommended, fastest, or a rank 1-4 in the file's ranked list.
  const int choice = data[0] % 6;
  const auto pick = choice == 0   ? shardplan::PlanPick::recommended()
                    : choice == 1 ? shardplan::PlanPick::fastest()
                                  : shardplan::PlanPick::ranked(choice - 1);
  try {
    shardplan::read_plan_file(shardplan::fuzz::text_of(data + 1, size - 1), "plan.json", pick);
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
