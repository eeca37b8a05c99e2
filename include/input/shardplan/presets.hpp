// The profiles compiled into the binary (profiles/**/*.json, embedded by
// cmake/embed_profiles.cmake) and the kinds of preset they hold. profiles.hpp reads them.
#pragma once

#include <string>
#include <vector>

namespace shardplan {

/// A profile compiled into the binary (generated from profiles/**/*.json).
struct EmbeddedFile {
  const char* path;  // relative to profiles/, e.g. "gpus/h100-sxm.json"
  const char* text;
  const char* names;           // its "name" and "aliases", lowercased, each ending in '\n'
  const char* accuracy_class;  // a GPU profile's "accuracy_class"; "" when it has none
};
const std::vector<EmbeddedFile>& embedded_profiles();
/// The embedded profile at `path` (relative to profiles/), or nullptr when the build has none.
const EmbeddedFile* find_embedded(const std::string& path);

/// The kinds of preset a user names (`--gpu`, `--link`, `--cluster`, `--model`), each a folder
/// of profiles/.
enum class ProfileKind { gpu, link, cluster, model };

}  // namespace shardplan
