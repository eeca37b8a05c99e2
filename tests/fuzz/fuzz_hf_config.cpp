// Hugging Face config.json text -> ModelSpec.
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    shardplan::fuzz::exercise_model(
        shardplan::model_from_hf_config(shardplan::fuzz::text_of(data, size), "config.json"));
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
