// A launcher config read back by --from: the first byte picks the reader (by extension), the
// rest is the file.
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/launcher_config_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kPaths[] = {"train.sh", "ds.json", "job.toml", "accelerate.yaml"};
  try {
    shardplan::read_launcher_config(shardplan::fuzz::text_of(data + 1, size - 1),
                                    kPaths[data[0] % 4]);
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
