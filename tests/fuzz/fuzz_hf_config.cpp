// Hugging Face config.json text -> ModelSpec.
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/layer.hpp"
#include "shardplan/model.hpp"
#include "shardplan/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const shardplan::ModelSpec m = shardplan::model_from_hf_config(shardplan::fuzz::text_of(data, size), "config.json");
    // What every command does next with an accepted model: count it and lay out its ops (a
    // layer pattern indexed past its end, a mixer with no shapes, would show here).
    (void)shardplan::count_params(m);
    if (m.has_architecture()) {
      shardplan::TrainingSpec tr;
      tr.seq_len = 64;
      tr.global_batch = 1;
      (void)shardplan::describe_micro_batch(m, tr, shardplan::ParallelPlan{});
    }
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
