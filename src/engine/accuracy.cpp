// What one class's validation cases span, and what of a plan lies outside it (accuracy.hpp).
#include "shardplan/accuracy.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace shardplan {

namespace {

bool holds(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Adds `name` to a sorted list of distinct names.
void add_name(std::vector<std::string>& names, const std::string& name) {
  if (holds(names, name)) return;
  names.push_back(name);
  std::sort(names.begin(), names.end());
}

}  // namespace

void CorpusReach::add(const PlanScope& s) {
  (s.moe ? moe : dense) = true;
  for (const std::string& mixer : s.mixers) add_name(mixers, mixer);
  add_name(gemm_dtypes, s.gemm_dtype);
  max_cp = std::max(max_cp, s.cp);
  ulysses = ulysses || s.ulysses;
  max_gpus = std::max(max_gpus, s.gpus);
}

std::string CorpusReach::outside(const PlanScope& s) const {
  std::vector<std::string> out;
  if (s.moe && !moe) out.emplace_back("a mixture of experts (they are dense)");
  if (!s.moe && !dense) out.emplace_back("a dense model (they are mixtures of experts)");
  std::vector<std::string> unseen;
  for (const std::string& mixer : s.mixers) {
    if (!holds(mixers, mixer)) unseen.push_back(mixer);
  }
  if (!unseen.empty()) {
    out.push_back(fmt::format("{} layers (they train {})", fmt::join(unseen, ", "),
                              mixers.empty() ? "softmax attention only" : fmt::format(
                                  "softmax attention and {}", fmt::join(mixers, ", "))));
  }
  if (!holds(gemm_dtypes, s.gemm_dtype))
    out.push_back(
        fmt::format("{} GEMMs (they run {})", s.gemm_dtype, fmt::join(gemm_dtypes, ", ")));
  if (s.cp > max_cp)
    out.push_back(fmt::format("context parallel {} (they reach {})", s.cp, max_cp));
  if (s.ulysses && !ulysses)
    out.emplace_back("Ulysses context parallelism (their context parallelism is ring attention)");
  if (s.gpus > max_gpus)
    out.push_back(fmt::format("{} GPUs (they reach {})", s.gpus, max_gpus));
  return fmt::format("{}", fmt::join(out, "; "));
}

}  // namespace shardplan
