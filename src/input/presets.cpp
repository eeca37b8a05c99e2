// The profiles compiled into the binary (presets.hpp); the generated profiles_data.cpp defines
// embedded_profiles().
#include "shardplan/presets.hpp"

namespace shardplan {

const EmbeddedFile* find_embedded(const std::string& path) {
  for (const EmbeddedFile& f : embedded_profiles()) {
    if (path == f.path) return &f;
  }
  return nullptr;
}

}  // namespace shardplan
