// GPU, link and cluster profile files, including the cluster profiles `shardplan probe` writes:
// the first byte picks the kind, the rest is the file.
#include "fuzz_support.hpp"
#include "shardplan/error.hpp"
#include "shardplan/profiles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string path =
      shardplan::fuzz::write_input(shardplan::fuzz::text_of(data + 1, size - 1), "-profile.json");
  try {
    switch (data[0] % 3) {
      case 0:
        shardplan::load_gpu(path);
        break;
      case 1:
        shardplan::load_cluster(path);
        break;
      default: {
        shardplan::ClusterOptions o;
        o.gpu = path;  // a GPU file names its links by preset; the cluster is built around it
        o.gpus = 16;
        shardplan::build_cluster(o);
      }
    }
  } catch (const shardplan::InputError&) {
  }
  return 0;
}
