// Words for the precision rules: the GPU generations a recipe row names, with the GPU presets
// of each, and the frameworks it names.
#include "precision_words.hpp"

#include <fmt/format.h>

#include <cctype>

#include "shardplan/profiles.hpp"

namespace shardplan {
namespace {

// "hopper" -> "Hopper", "cdna3" -> "CDNA 3": as the vendors name their architectures.
std::string generation_name(const std::string& g) {
  if (g.starts_with("cdna")) return "CDNA " + g.substr(4);
  if (g.empty()) return "of no stated generation";
  return static_cast<char>(std::toupper(static_cast<unsigned char>(g[0]))) + g.substr(1);
}

// "Blackwell (B200, B300, GB200, GB300)": a generation with the GPU presets of it.
std::string generation_with_presets(const std::string& generation) {
  std::string names;
  for (const EmbeddedFile& f : embedded_profiles()) {
    const std::string path = f.path;
    if (!path.starts_with("gpus/") || !path.ends_with(".json")) continue;
    const GpuSpec g = load_gpu(path.substr(5, path.size() - 10));
    if (g.generation == generation) names += (names.empty() ? "" : ", ") + g.name;
  }
  return generation_name(generation) + (names.empty() ? "" : " (" + names + ")");
}

}  // namespace

std::string generation_words(const RuleContext& c) {
  const PrecisionRecipe& r = c.training.recipe;
  const GpuSpec& g = c.cluster.gpu;
  // The hardware has the format but no stack here runs the recipe on it: say that, not that
  // the GPU lacks it.
  for (const auto& [gen, why] : r.hardware_without_stack) {
    if (gen == g.generation) {
      return fmt::format("{} does not run on {} ({}): {}", r.name, g.name,
                         generation_name(g.generation), why);
    }
  }
  std::string needs;
  for (const std::string& gen : r.gpu_generations)
    needs += (needs.empty() ? "" : " or ") + generation_with_presets(gen);
  return fmt::format("{} needs {}; {} is {}", r.name, needs, g.name, generation_name(g.generation));
}

std::string recipe_frameworks(const PrecisionRecipe& r) {
  std::string out;
  for (const Framework f : r.frameworks)
    out += (out.empty() ? "" : ", ") + std::string(to_string(f));
  return out;
}

}  // namespace shardplan
