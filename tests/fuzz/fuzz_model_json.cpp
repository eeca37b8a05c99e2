// A model file given as --model FILE: shardplan's model JSON (or a config.json it recognises).
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      shardplan::fuzz::write_input(shardplan::fuzz::text_of(data, size), "-model.json");
  try {
    shardplan::fuzz::exercise_model(shardplan::load_model(path));
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
