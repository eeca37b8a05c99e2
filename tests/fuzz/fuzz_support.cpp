// The one temporary file each harness process reuses for parsers that read a path.
#include "fuzz_support.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "shardplan/layer.hpp"
#include "shardplan/model.hpp"

namespace shardplan::fuzz {

std::string write_input(const std::string& text, const char* suffix) {
  const std::string path =
      "/tmp/shardplan-fuzz-" + std::to_string(static_cast<long>(::getpid())) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

void exercise_model(const ModelSpec& model) {
  (void)count_params(model);
  if (!model.has_architecture()) return;
  TrainingSpec training;
  training.seq_len = 64;
  training.global_batch = 1;
  (void)describe_micro_batch(model, training, ParallelPlan{});
}

}  // namespace shardplan::fuzz
